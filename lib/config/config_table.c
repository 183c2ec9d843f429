/*
 * tandem.json's keys, one table: every key once, with its type, default,
 * rule and place in struct config (as keepalived's keyword table drives its
 * parser), and what a reload does when it changes. Below the parse
 * (config_parse.c) and the walk (config_walk.c), which read it; it calls down
 * only, to the rules (config_check.c, vllmargs.c) its entries name.
 */
#include <stddef.h>
#include <string.h>

#include "accel.h"
#include "config_int.h"
#include "vllmargs.h"

#define CFG(f)	offsetof(struct config, f)
#define NODE(f)	offsetof(struct node_conf, f)
#define REQ	"missing (required)"
#define NOT_OPTION "must not begin with '-': vllm serve would take it for " \
		"an option"
/* The positional part of an entry; the other fields are named. */
#define K(p, t, r, o, o2) .path = (p), .type = (t), .reload = (r), \
		.off = (o), .off2 = (o2)
#define NAME_RULE "use letters, digits, '.', '_', '-' (at most 63)"

/* K_CHOICE stores through an int. */
_Static_assert(sizeof(enum topology) == sizeof(int), "enum topology is an int");
_Static_assert(sizeof(enum accel) == sizeof(int), "enum accel is an int");

static const struct choice topologies[] = {
	{ "ray", TOPO_RAY }, { "dp", TOPO_DP }, { NULL, 0 } };
static const struct choice accelerators[] = {
	{ "nvidia", ACCEL_NVIDIA }, { "ascend", ACCEL_ASCEND },
	{ "none", ACCEL_NONE }, { NULL, 0 } };
static const struct choice roles[] = {
	{ "head", 1 }, { "worker", 0 }, { NULL, 0 } };
static const struct choice ready_when[] = {
	{ "serving", 1 }, { "started", 0 }, { NULL, 0 } };
static const struct choice on_stop[] = {
	{ "keep", 0 }, { "teardown", 1 }, { NULL, 0 } };

static int
all_nodes(const struct config *cf)
{
	return (int)cf->nnodes;
}

/* vLLM asks Ray for tensor x pipeline parallel GPUs, else one per node. */
static int
ray_gpus(const struct config *cf)
{
	return vllmargs_gpus(&cf->vllm.args, (int)cf->nnodes);
}

static int
dp_size(const struct config *cf)
{
	return (int)cf->nnodes * cf->dp.size_local;
}

static int
dp_api_servers(const struct config *cf)
{
	return cf->dp.size;
}

static int
node_ssh_port(const struct config *cf)
{
	return cf->ssh.port;
}

/* nodes[].image_archive falls back to container.image_archive */
static char *
image_archive(const struct config *cf)
{
	return cf->container.image_archive ?
	    xstrdup(cf->container.image_archive) : NULL;
}

/* ascend when extra_args pass /dev/davinci* devices, else nvidia */
static char *
accelerator(const struct config *cf)
{
	return xstrdup(accel_name(accel_default(&cf->container.extra_args)));
}

static char *
vllm_url(const struct config *cf)
{
	return xprintf("http://127.0.0.1:%d", cf->vllm.port);
}

const struct ckey config_table[] = {
	{ K("name", K_STR, R_LIVE, CFG(name), 0), .sdef = "tandem",
	  .valid = cf_valid_name, .why = NAME_RULE },
	{ K("listen", K_LISTEN, R_LIVE, CFG(listen_host), CFG(listen_port)),
	  .sdef = "127.0.0.1:9100", .why = "must be IPv4:PORT or [IPv6]:PORT" },
	{ K("api_token_file", K_STR, R_LIVE, CFG(api_token_file), 0),
	  .flags = KF_PATH },
	/*
	 * tandemctl's way in (docs/api.md): bound at start only, like listen;
	 * a reload that changes it says so (the new path takes a restart).
	 */
	{ K("api_socket", K_STR, R_LIVE, CFG(api_socket), 0),
	  .sdef = "/run/tandem/api.sock", .valid = cf_valid_sockpath,
	  .why = "must be an absolute path of at most 107 bytes (a Unix "
	  "socket's limit)" },
	{ K("topology", K_CHOICE, R_REBUILD, CFG(topology), 0), .sdef = "ray",
	  .choices = topologies },

	{ K("ssh", K_OBJECT, R_SSH, 0, 0), .required = "missing (required: "
	  "known_hosts_file and identity_file at least)" },
	{ K("ssh.user", K_STR, R_SSH, CFG(ssh.user), 0), .sdef = "root",
	  .valid = cf_valid_user, .why = "not a valid user name" },
	{ K("ssh.port", K_INT, R_SSH, CFG(ssh.port), 0), .ndef = 22,
	  .min = 1, .max = 65535 },
	{ K("ssh.identity_file", K_STR, R_SSH, CFG(ssh.identity_file), 0),
	  .required = REQ, .flags = KF_PATH },
	{ K("ssh.known_hosts_file", K_STR, R_SSH, CFG(ssh.known_hosts_file),
	  0), .required = REQ, .flags = KF_PATH },
	{ K("ssh.connect_timeout_s", K_NUM, R_SSH, CFG(ssh.connect_timeout_s),
	  0), .ndef = 5, .min = 0.1, .max = 300 },
	/*
	 * 1.5: a silent node (power lost, link cut) is lost after 4 s of
	 * silence (3 missed beats, capped at 2 intervals + 1 s), noticed
	 * within 5 s; a node may stall for 2.5 s beyond its echo's round trip
	 * before it is called lost (docs/configuration.md, the trade-off).
	 */
	{ K("ssh.keepalive_s", K_NUM, R_SSH, CFG(ssh.keepalive_s), 0),
	  .ndef = 1.5, .min = 0.1, .max = 3600 },

	{ K("container", K_OBJECT, R_REBUILD, 0, 0),
	  .required = "missing (required: image at least)",
	  .post = cf_check_container },
	{ K("container.engine", K_STR, R_REBUILD, CFG(container.engine), 0),
	  .sdef = "docker", .valid = cf_valid_engine,
	  .why = "must be \"docker\" or \"podman\"" },
	{ K("container.image", K_STR, R_REBUILD, CFG(container.image), 0),
	  .required = REQ, .valid = cf_valid_image,
	  .why = "not a valid image reference", .flags = KF_PATH },
	{ K("container.shm_size", K_STR, R_REBUILD, CFG(container.shm_size),
	  0), .sdef = "16g", .valid = cf_valid_shm,
	  .why = "must be a size like 16g, 512m or 1073741824" },
	{ K("container.volumes", K_STRLIST, R_REBUILD, CFG(container.volumes),
	  0), .valid = cf_valid_volume, .why = "must be /HOST:/CONTAINER[:ro]",
	  .flags = KF_PATH },
	{ K("container.env", K_ENV, R_REBUILD, CFG(container.env), 0) },
	{ K("container.extra_args", K_STRLIST, R_REBUILD,
	  CFG(container.extra_args), 0) },
	/* after extra_args: its default is read from them */
	{ K("container.accelerator", K_CHOICE, R_REBUILD,
	  CFG(container.accelerator), 0), .sdyn = accelerator,
	  .choices = accelerators },
	{ K("container.image_archive", K_STR, R_REBUILD,
	  CFG(container.image_archive), 0), .valid = cf_valid_abspath,
	  .why = "must be an absolute path on the nodes", .flags = KF_PATH },
	/*
	 * vLLM's, inductor's, Triton's and the hub's caches on each node
	 * (issue 47, docs/operations.md "Caches"): "" or null turns it off.
	 * R_LIVE: the plan renders the mount only with a label hash, and
	 * plan_hash renders without it, so a move does not force a rebuild.
	 */
	{ K("container.cache_dir", K_STR, R_LIVE, CFG(container.cache_dir),
	  0), .sdef = "/var/cache/tandem", .valid = cf_valid_cachedir,
	  .why = "must be an absolute path without ':' or ',', or \"\" (no "
	  "cache)", .flags = KF_PATH | KF_OFF_EMPTY },
	{ K("container.cache_max_gib", K_NUM, R_LIVE,
	  CFG(container.cache_max_gib), 0), .ndef = 50, .min = 1,
	  .max = 65536 },
	{ K("container.stop_foreign", K_STRLIST, R_LIVE,
	  CFG(container.stop_foreign), 0), .valid = cf_valid_regex,
	  .why = "not a POSIX extended regular expression within tandem's "
	  "bounds (at most 256 bytes, no backreference, a count {m,n} of at "
	  "most 255 only after a character, '.' or [...])" },

	{ K("nodes", K_NODES, R_REBUILD, 0, 0), .required = REQ,
	  .each = cf_check_node, .post = cf_check_nodes },
	{ K("nodes[].name", K_STR, R_REBUILD, NODE(name), 0), .required = REQ,
	  .valid = cf_valid_name, .why = NAME_RULE, .flags = KF_AT_PARENT },
	{ K("nodes[].role", K_CHOICE, R_REBUILD, NODE(is_head), 0),
	  .required = REQ, .choices = roles },
	{ K("nodes[].ssh_host", K_STR, R_REBUILD, NODE(ssh_host), 0),
	  .required = REQ, .valid = cf_valid_host,
	  .why = "not a host name or address" },
	{ K("nodes[].ssh_port", K_INT, R_REBUILD, NODE(ssh_port), 0),
	  .idyn = node_ssh_port, .min = 1, .max = 65535 },
	{ K("nodes[].ip", K_STR, R_REBUILD, NODE(ip), 0), .required = REQ,
	  .valid = cf_valid_ipv4, .why = "not an IPv4 address" },
	{ K("nodes[].ifname", K_STR, R_REBUILD, NODE(ifname), 0),
	  .required = REQ, .valid = cf_valid_ifname, .why = "not a valid "
	  "interface name (at most 15 of letters, digits, '_', '.', '-')" },
	{ K("nodes[].env", K_ENV, R_REBUILD, NODE(env), 0) },
	{ K("nodes[].container_name", K_STR, R_REBUILD, NODE(container_name),
	  0), .valid = cf_valid_container_name, .why = "not a valid container "
	  "name ([a-zA-Z0-9][a-zA-Z0-9_.-]+)" },
	{ K("nodes[].image_archive", K_STR, R_REBUILD, NODE(image_archive), 0),
	  .sdyn = image_archive, .valid = cf_valid_abspath,
	  .why = "must be an absolute path on the node", .flags = KF_PATH },

	{ K("vllm", K_OBJECT, R_REBUILD, 0, 0),
	  .required = "missing (required: model at least)",
	  .post = cf_check_vllm },
	{ K("vllm.model", K_STR, R_REBUILD, CFG(vllm.model), 0),
	  .required = REQ, .valid = cf_valid_not_option, .why = NOT_OPTION,
	  .flags = KF_PATH },
	{ K("vllm.port", K_INT, R_REBUILD, CFG(vllm.port), 0), .ndef = 8000,
	  .min = 1, .max = 65535 },
	{ K("vllm.args", K_STRLIST, R_REBUILD, CFG(vllm.args), 0) },
	{ K("vllm.url", K_STR, R_LIVE, CFG(vllm.url), 0), .sdyn = vllm_url,
	  .valid = cf_valid_url, .why = "must start with http:// or https://" },
	{ K("vllm.log_file", K_STR, R_REBUILD, CFG(vllm.log_file), 0),
	  .sdef = "/tmp/vllm_serve.log", .valid = cf_valid_abspath,
	  .why = "must be an absolute path inside the head container",
	  .flags = KF_PATH },
	{ K("vllm.ready_timeout_s", K_NUM, R_LIVE, CFG(vllm.ready_timeout_s),
	  0), .ndef = 1800, .min = 1, .max = 86400 },
	{ K("vllm.served_model_name", K_STR, R_REBUILD,
	  CFG(vllm.served_model_name), 0), .valid = cf_valid_not_option,
	  .why = NOT_OPTION, .flags = KF_PATH },

	/*
	 * The key tandem sends on /v1 when vLLM gets it another way than
	 * vllm.args or container.env (an --env-file in extra_args): a file
	 * on tandem's host, kept from other users like api_token_file.
	 */
	{ K("vllm.api_key_file", K_STR, R_LIVE, CFG(vllm.api_key_file), 0),
	  .valid = cf_valid_abspath, .why = "must be an absolute path" },

	{ K("ray", K_OBJECT, R_REBUILD, 0, 0), .topology = "ray" },
	{ K("ray.port", K_INT, R_REBUILD, CFG(ray.port), 0), .ndef = 6379,
	  .min = 1, .max = 65535 },
	{ K("ray.expect_nodes", K_INT, R_LIVE, CFG(ray.expect_nodes), 0),
	  .idyn = all_nodes, .min = 1, .max = 100000 },
	{ K("ray.expect_gpus", K_INT, R_LIVE, CFG(ray.expect_gpus), 0),
	  .idyn = ray_gpus, .min = 1, .max = 1000000 },
	/*
	 * Ray 2.52's token auth: the file is on every node and goes into the
	 * containers read-only; the token itself is never on a command line.
	 */
	{ K("ray.auth_token_file", K_STR, R_REBUILD, CFG(ray.auth_token_file),
	  0), .valid = cf_valid_abspath,
	  .why = "must be an absolute path on the nodes", .flags = KF_PATH },

	{ K("dp", K_OBJECT, R_REBUILD, 0, 0), .topology = "dp",
	  .post = cf_check_dp },
	{ K("dp.size_local", K_INT, R_REBUILD, CFG(dp.size_local), 0),
	  .ndef = 1, .min = 1, .max = 1024 },
	{ K("dp.size", K_INT, R_REBUILD, CFG(dp.size), 0), .idyn = dp_size,
	  .min = 1, .max = 65536 },
	{ K("dp.rpc_port", K_INT, R_REBUILD, CFG(dp.rpc_port), 0),
	  .ndef = 13389, .min = 1, .max = 65535 },
	{ K("dp.api_server_count", K_INT, R_REBUILD, CFG(dp.api_server_count),
	  0), .idyn = dp_api_servers, .min = 1, .max = 1024 },
	{ K("dp.seed", K_INT, R_REBUILD, CFG(dp.seed), 0), .ndef = 1024,
	  .min = 0, .max = 2147483647 },

	{ K("probe", K_OBJECT, R_LIVE, 0, 0) },
	{ K("probe.interval_s", K_NUM, R_LIVE, CFG(probe.interval_s), 0),
	  .ndef = 5, .min = 0.1, .max = 3600 },
	{ K("probe.timeout_s", K_NUM, R_LIVE, CFG(probe.timeout_s), 0),
	  .ndef = 10, .min = 0.1, .max = 3600 },
	{ K("probe.failures_to_degrade", K_INT, R_LIVE,
	  CFG(probe.failures_to_degrade), 0), .ndef = 2, .min = 1, .max = 100 },
	{ K("probe.generate_every_s", K_NUM, R_LIVE,
	  CFG(probe.generate_every_s), 0), .ndef = 30, .min = 0.1,
	  .max = 86400 },
	{ K("probe.ray_wait_timeout_s", K_NUM, R_LIVE,
	  CFG(probe.ray_wait_timeout_s), 0), .ndef = 300, .min = 1,
	  .max = 86400 },
	/*
	 * 180: longer than a long prompt's prefill on a slow node (vLLM counts
	 * a prompt's tokens only when its first token comes out), far shorter
	 * than NCCL's 10-minute watchdog (docs/configuration.md).
	 */
	{ K("probe.stall_s", K_NUM, R_LIVE, CFG(probe.stall_s), 0),
	  .ndef = 180, .min = 1, .max = 86400 },
	{ K("probe.stall_readings", K_INT, R_LIVE, CFG(probe.stall_readings),
	  0), .ndef = 3, .min = 1, .max = 1000 },

	{ K("recovery", K_OBJECT, R_LIVE, 0, 0), .post = cf_check_recovery },
	{ K("recovery.backoff_initial_s", K_NUM, R_LIVE,
	  CFG(recovery.backoff_initial_s), 0), .ndef = 5, .min = 0.1,
	  .max = 86400 },
	{ K("recovery.backoff_max_s", K_NUM, R_LIVE,
	  CFG(recovery.backoff_max_s), 0), .ndef = 300, .min = 0.1,
	  .max = 86400 },
	{ K("recovery.max_rebuilds_per_hour", K_INT, R_LIVE,
	  CFG(recovery.max_rebuilds_per_hour), 0), .ndef = 10, .min = 1,
	  .max = REBUILDS_HISTORY },
	/*
	 * While the retries are stopped: how often the condition that
	 * stopped them is asked again, read-only (lib/preflight/recheck.c).
	 */
	{ K("recovery.recheck_s", K_NUM, R_LIVE, CFG(recovery.recheck_s), 0),
	  .ndef = 30, .min = 0.5, .max = 86400 },
	/*
	 * A change of the image, model or flags that fails this many
	 * attempts in a row is rolled back to the last config that served
	 * (issue 46).
	 */
	{ K("recovery.change_attempts", K_INT, R_LIVE,
	  CFG(recovery.change_attempts), 0), .ndef = 2, .min = 1, .max = 100 },
	{ K("recovery.gpu_memory_utilization_steps", K_STEPS, R_LIVE,
	  CFG(recovery.gmu_steps), CFG(recovery.ngmu_steps)) },

	{ K("systemd", K_OBJECT, R_LIVE, 0, 0), .post = cf_check_systemd },
	/*
	 * READY=1 goes out once tandemd is up (PRODUCT.md section 3, rule
	 * 8); "serving", what it once waited for, is accepted with a warning
	 * so that existing configs still load.
	 */
	{ K("systemd.ready_when", K_CHOICE, R_LIVE,
	  CFG(systemd.ready_when_serving), 0), .sdef = "started",
	  .choices = ready_when },
	{ K("systemd.on_stop", K_CHOICE, R_LIVE,
	  CFG(systemd.on_stop_teardown), 0), .sdef = "keep",
	  .choices = on_stop },

	/*
	 * The operator's command on every change of state (daemon/hooks.c):
	 * an argument vector, never a shell line, run with the change in
	 * its environment and killed after timeout_s.
	 */
	{ K("hooks", K_OBJECT, R_LIVE, 0, 0), .post = cf_check_hooks },
	{ K("hooks.on_state", K_STRLIST, R_LIVE, CFG(hooks.on_state), 0) },
	{ K("hooks.on_change", K_STRLIST, R_LIVE, CFG(hooks.on_change), 0) },
	{ K("hooks.timeout_s", K_NUM, R_LIVE, CFG(hooks.timeout_s), 0),
	  .ndef = 10, .min = 0.1, .max = 3600 },
};

const size_t config_ntable = sizeof(config_table) / sizeof(*config_table);

/* The key's own name: "port" of "ssh.port", "ip" of "nodes[].ip". */
const char *
cf_leaf(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot ? dot + 1 : path;
}

/* A key of a node, stored in struct node_conf. */
int
cf_node_key(const struct ckey *k)
{
	return strstr(k->path, "[].") != NULL;
}

/* Entries i+1.. are the section's keys while their path starts "sec." */
size_t
cf_nkeys(size_t i)
{
	const char *sec = config_table[i].path;
	size_t n = strlen(sec), j;

	for (j = i + 1; j < config_ntable; j++) {
		const char *p = config_table[j].path;

		if (strncmp(p, sec, n) != 0 || (p[n] != '.' &&
		    strncmp(p + n, "[].", 3) != 0))
			break;
	}
	return j - i - 1;
}
