/*
 * What the actions find out that /status and /metrics show too: a
 * container's state and the probe kinds. Here, below cluster.h, so that
 * act_env.h needs nothing of the runtime's headers (folder arrows run
 * down only: daemon/cluster -> daemon/cluster/act, tests/lint/includes).
 */
#ifndef TANDEM_ACT_TYPES_H
#define TANDEM_ACT_TYPES_H

enum ctr_state { CTR_UNKNOWN, CTR_RUNNING, CTR_EXITED, CTR_MISSING };

/* The probe kinds, as indexes of the probe-duration histograms. */
enum probe_kind { PR_CONTAINER, PR_RAY, PR_HEALTH, PR_GENERATE, PR_COUNT };

#endif
