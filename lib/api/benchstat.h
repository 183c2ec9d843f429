/*
 * Statistics and tables of the seed-000 load test (tandemctl bench): per
 * concurrency level, throughput and latency percentiles over all samples
 * (never an average of averages), and the DGX Spark guide's two load-test tables.
 */
#ifndef TANDEM_BENCHSTAT_H
#define TANDEM_BENCHSTAT_H

#include <stddef.h>

#include "util.h"

enum bench_err { BE_HTTP, BE_TIMEOUT, BE_CONNECT, BE_OTHER, BE_COUNT };

struct bench_sample {
	double	 latency_s;
	double	 ttft_s;	/* streaming only; 0 otherwise */
	double	 itl_s;		/* mean inter-token latency; streaming */
	int	 prompt_tokens;
	int	 completion_tokens;
	int	 ok;
	int	 err;		/* enum bench_err when !ok */
	long	 status;
};

struct bench_level {
	int			 concurrency;
	double			 wall_s;
	struct bench_sample	*s;
	size_t			 n;
	size_t			 cap;
};

struct bench_summary {
	int	 concurrency;
	double	 wall_s;
	double	 qps;
	double	 prompt_tps;
	double	 completion_tps;
	double	 total_tps;
	double	 lat_avg;
	double	 lat_p50;
	double	 lat_p95;
	double	 lat_p99;
	double	 ttft_p50;
	double	 ttft_p95;
	double	 itl_p50;
	int	 ok;
	int	 failed;
	int	 errors[BE_COUNT];
};

/* Nearest-rank percentile of v[0..n) (sorted in place); 0 when n is 0. */
double	percentile(double *v, size_t n, double q);
void	bench_add(struct bench_level *, const struct bench_sample *);
void	bench_summarize(const struct bench_level *, struct bench_summary *);
void	bench_free(struct bench_level *);

enum bench_format { BF_TABLE, BF_MARKDOWN, BF_JSON, BF_CSV };

/* The guide's load-test table, then its second (relative to the first level). */
void	bench_render(struct sbuf *, enum bench_format, int stream,
	    const struct bench_summary *, size_t n);
const char *bench_err_name(int);

#endif
