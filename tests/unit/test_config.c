/* Config parsing: defaults, derived values, and every error's exact text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conffile.h"
#include "config.h"
#include "vllmargs.h"

#define SSH	"\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/kh\"}"
#define CTR	"\"container\":{\"image\":\"img\"}"
#define N1	"{\"name\":\"a\",\"role\":\"head\",\"ssh_host\":\"h1\"," \
		"\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\"}"
#define N2	"{\"name\":\"b\",\"role\":\"worker\",\"ssh_host\":\"h2\"," \
		"\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}"
#define NODES	"\"nodes\":[" N1 "," N2 "]"
#define VLLM	"\"vllm\":{\"model\":\"/m\"}"
#define BASE	SSH "," CTR "," NODES "," VLLM
#define BASE_NOVLLM SSH "," CTR "," NODES

struct bad {
	const char	*json;
	const char	*want;
};

static const struct bad bad[] = {
	{ "{\"name\": \"x\",}", "t.json:1:14: string or '}' expected near '}'" },
	{ "", "t.json:1:0: '[' or '{' expected near end of file" },
	{ "[1]", "t.json:1:1: (top level): the config must be a JSON object, "
	  "not a list" },
	{ "{" BASE ",\"nmae\":\"x\"}", "t.json:1:275: nmae: unknown key" },
	{ "{" BASE ",\"name\":\"x\",\"name\":\"y\"}",
	  "t.json:1:284: duplicate object key near '\"name\"'" },
	{ "{" CTR "," NODES "," VLLM "}", "t.json:1:1: ssh: missing "
	  "(required: known_hosts_file and identity_file at least)" },
	{ "{\"ssh\":{\"identity_file\":\"/k\"}," CTR "," NODES "," VLLM "}",
	  "t.json:1:8: ssh.known_hosts_file: missing (required)" },
	{ "{\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/kh\","
	  "\"port\":70000}," CTR "," NODES "," VLLM "}",
	  "t.json:1:62: ssh.port: 70000 is out of range (1..65535)" },
	{ "{\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/kh\","
	  "\"port\":\"22\"}," CTR "," NODES "," VLLM "}",
	  "t.json:1:62: ssh.port: must be an integer, not a string" },
	{ "{\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/kh\","
	  "\"usr\":\"root\"}," CTR "," NODES "," VLLM "}",
	  "t.json:1:61: ssh.usr: unknown key" },
	{ "{" SSH "," NODES "," VLLM "}", "t.json:1:1: container: missing "
	  "(required: image at least)" },
	{ "{" SSH ",\"container\":{\"image\":\"a b\"}," NODES "," VLLM "}",
	  "t.json:1:77: container.image: not a valid image reference" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"engine\":\"lxc\"}," NODES
	  "," VLLM "}", "t.json:1:90: container.engine: must be \"docker\" or "
	  "\"podman\"" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"volumes\":[\"model\"]},"
	  NODES "," VLLM "}", "t.json:1:92: container.volumes[0]: must be "
	  "/HOST:/CONTAINER[:ro]" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"env\":{\"1X\":\"v\"}},"
	  NODES "," VLLM "}", "t.json:1:93: container.env.1X: not a valid "
	  "environment variable name (letters, digits, _; not starting with a "
	  "digit)" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"env\":{\"H\":\"{ipp}\"}},"
	  NODES "," VLLM "}", "t.json:1:92: container.env.H: unknown "
	  "placeholder (placeholders are {ip} {ifname} {name} {rank})" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"env\":{\"VLLM_HOST_IP\":"
	  "\"1\"}}," NODES "," VLLM "}", "t.json:1:103: container.env."
	  "VLLM_HOST_IP: is derived from the node's ip and ifname; remove it" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"shm_size\":\"lots\"}," NODES
	  "," VLLM "}", "t.json:1:92: container.shm_size: must be a size like "
	  "16g, 512m or 1073741824" },
	{ "{" SSH "," CTR "," VLLM "}", "t.json:1:1: nodes: missing "
	  "(required)" },
	{ "{" SSH "," CTR ",\"nodes\":[]," VLLM "}",
	  "t.json:1:92: nodes: must list at least the head node" },
	{ "{" SSH "," CTR ",\"nodes\":[" N2 "]," VLLM "}",
	  "t.json:1:92: nodes: no node has role \"head\"; exactly one must" },
	{ "{" SSH "," CTR ",\"nodes\":[" N1 ",{\"name\":\"b\",\"role\":\"head\","
	  "\"ssh_host\":\"h2\",\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:168: nodes[1]: a second head node; exactly one node has "
	  "role \"head\"" },
	{ "{" SSH "," CTR ",\"nodes\":[" N1 ",{\"name\":\"b\",\"role\":\"worker\","
	  "\"ssh_host\":\"h2\",\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:168: nodes[1]: ip 10.0.0.1 is already used by "
	  "nodes[0]; every node needs a unique IP address" },
	{ "{" SSH "," CTR ",\"nodes\":[" N1 ",{\"name\":\"a\",\"role\":\"worker\","
	  "\"ssh_host\":\"h2\",\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:168: nodes[1]: name \"a\" is already used by "
	  "nodes[0]" },
	{ "{" SSH "," CTR ",\"nodes\":[" N1 ",{\"name\":\"b\",\"role\":\"worker\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.2\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:168: nodes[1]: ssh_host h1:22 is already used by "
	  "nodes[0]" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.300\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:140: nodes[0].ip: not an IPv4 address" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.1\",\"ifname\":\"eth0;reboot\"}],"
	  VLLM "}", "t.json:1:160: nodes[0].ifname: not a valid interface name "
	  "(at most 15 of letters, digits, '_', '.', '-')" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.1\",\"ifname\":\"averyveryverylong0"
	  "\"}]," VLLM "}", "t.json:1:160: nodes[0].ifname: not a valid "
	  "interface name (at most 15 of letters, digits, '_', '.', '-')" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"boss\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\"}]," VLLM
	  "}", "t.json:1:112: nodes[0].role: must be \"head\" or \"worker\"" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\"}]," VLLM "}",
	  "t.json:1:93: nodes[0].ssh_host: missing (required)" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\","
	  "\"container_name\":\"-x\"}]," VLLM "}", "t.json:1:184: "
	  "nodes[0].container_name: not a valid container name "
	  "([a-zA-Z0-9][a-zA-Z0-9_.-]+)" },
	{ "{" SSH "," CTR ",\"nodes\":[{\"name\":\"a\",\"role\":\"head\","
	  "\"ssh_host\":\"h1\",\"ip\":\"10.0.0.1\",\"ifname\":\"eth0\","
	  "\"ssh_port\":0}]," VLLM "}", "t.json:1:178: nodes[0].ssh_port: 0 is "
	  "out of range (1..65535)" },
	{ "{" SSH "," CTR ",\"nodes\":{}," VLLM "}", "t.json:1:92: nodes: "
	  "must be a list, not an object" },
	{ "{" SSH "," CTR "," NODES "}", "t.json:1:1: vllm: missing "
	  "(required: model at least)" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--x\",\"\"]}}", "t.json:1:281: vllm.args[1]: empty argument" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "\"--x\"}}", "t.json:1:274: vllm.args: must be a list of strings, "
	  "not a string" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--port\",\"9\"]}}", "t.json:1:275: vllm.args[0]: --port 9 "
	  "conflicts with vllm.port, which makes tandem set --port 8000; remove "
	  "the flag or change the config" },
	{ "{" BASE_NOVLLM ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--distributed-executor-backend=mp\"]}}", "t.json:1:275: "
	  "vllm.args[0]: --distributed-executor-backend mp conflicts with "
	  "topology \"ray\", which makes tandem set "
	  "--distributed-executor-backend ray; remove the flag or change the "
	  "config" },
	{ "{" BASE_NOVLLM ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--x\",\"--port\"]}}", "t.json:1:281: vllm.args[1]: --port needs "
	  "a value" },
	{ "{" BASE_NOVLLM ",\"topology\":\"dp\",\"vllm\":{\"model\":\"/m\","
	  "\"args\":[\"--headless\"]}}", "t.json:1:291: vllm.args[0]: "
	  "--headless is set by tandem per node, from the worker nodes only; "
	  "remove it" },
	{ "{" BASE_NOVLLM ",\"topology\":\"dp\",\"vllm\":{\"model\":\"/m\","
	  "\"args\":[\"--data-parallel-start-rank=1\"]}}", "t.json:1:291: "
	  "vllm.args[0]: --data-parallel-start-rank is set by tandem per node, "
	  "from each node's rank; remove it" },
	{ "{" BASE_NOVLLM ",\"topology\":\"dp\",\"vllm\":{\"model\":\"/m\","
	  "\"args\":[\"--data-parallel-address=192.168.13.33\"]}}",
	  "t.json:1:291: vllm.args[0]: --data-parallel-address 192.168.13.33 "
	  "conflicts with the head node's ip, which makes tandem set "
	  "--data-parallel-address 10.0.0.1; remove the flag or change the "
	  "config" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--gpu-memory-utilization\",\"1.5\"]}}", "t.json:1:274: vllm.args: "
	  "--gpu-memory-utilization: \"1.5\" is not a number in (0, 1]" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"port\":0}}",
	  "t.json:1:274: vllm.port: 0 is out of range (1..65535)" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"url\":"
	  "\"ftp://x\"}}", "t.json:1:273: vllm.url: must start with http:// "
	  "or https://" },
	{ "{" BASE ",\"topology\":\"mesh\"}", "t.json:1:279: topology: must "
	  "be \"ray\" or \"dp\"" },
	{ "{" BASE ",\"dp\":{\"size\":2}}", "t.json:1:273: dp: only used with "
	  "topology \"dp\"" },
	{ "{" BASE ",\"topology\":\"dp\",\"dp\":{\"size\":3}}", "t.json:1:297: "
	  "dp.size: 3 does not equal nodes (2) x size_local (1)" },
	{ "{" BASE ",\"listen\":\"localhost:9100\"}", "t.json:1:277: listen: "
	  "must be IPv4:PORT or [IPv6]:PORT" },
	{ "{" BASE ",\"probe\":{\"interval_s\":0}}", "t.json:1:290: "
	  "probe.interval_s: 0 is out of range (0.1..3600)" },
	{ "{" BASE ",\"recovery\":{\"gpu_memory_utilization_steps\":[0.6,0.9]}}",
	  "t.json:1:316: recovery.gpu_memory_utilization_steps[1]: steps must "
	  "be numbers in (0, 1], each lower than the one before" },
	{ "{" BASE ",\"systemd\":{\"on_stop\":\"explode\"}}", "t.json:1:289: "
	  "systemd.on_stop: must be \"keep\" or \"teardown\"" },
	{ "{" BASE ",\"ray\":{\"expect_nodes\":true}}", "t.json:1:290: "
	  "ray.expect_nodes: must be an integer, not a boolean" },
	{ "{" BASE ",\"name\":\"my cluster\"}", "t.json:1:275: name: use "
	  "letters, digits, '.', '_', '-' (at most 63)" },
	/* issue 15: vllm serve would read these as options */
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"--help\"}}",
	  "t.json:1:262: vllm.model: must not begin with '-': vllm serve would "
	  "take it for an option" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\","
	  "\"served_model_name\":\"-x\"}}", "t.json:1:287: "
	  "vllm.served_model_name: must not begin with '-': vllm serve would "
	  "take it for an option" },
	/* issue 15: above the 1024-entry history the cap was never reached */
	{ "{" BASE ",\"recovery\":{\"max_rebuilds_per_hour\":1025}}",
	  "t.json:1:304: recovery.max_rebuilds_per_hour: 1025 is out of range "
	  "(1..1024)" },
	/* Cross-key rules and vllm.args, each once. */
	{ "{" BASE ",\"recovery\":{\"backoff_initial_s\":60,"
	  "\"backoff_max_s\":30}}", "t.json:1:319: recovery.backoff_max_s: is "
	  "smaller than backoff_initial_s" },
	{ "{" BASE ",\"topology\":\"dp\",\"ray\":{\"port\":1}}",
	  "t.json:1:290: ray: only used with topology \"ray\"" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"-tp\",\"0\"]}}", "t.json:1:274: vllm.args: "
	  "--tensor-parallel-size: \"0\" is not a positive integer" },
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m\",\"args\":"
	  "[\"--pipeline-parallel-size=x\"]}}", "t.json:1:274: vllm.args: "
	  "--pipeline-parallel-size: \"x\" is not a positive integer" },
	{ "{" SSH "," CTR ",\"nodes\":[" N1 ",2]," VLLM "}",
	  "t.json:1:168: nodes[1]: must be an object, not an integer" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"env\":{\"H\":\"{ip\"}},"
	  NODES "," VLLM "}", "t.json:1:92: container.env.H: unterminated '{' "
	  "(placeholders are {ip} {ifname} {name} {rank})" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"extra_args\":[1]},"
	  NODES "," VLLM "}", "t.json:1:95: container.extra_args[0]: must be a "
	  "string, not an integer" },
	/* issue 43 item 7: no control character in a path or a name */
	{ "{" SSH "," CTR "," NODES ",\"vllm\":{\"model\":\"/m/\\u001b]0;x"
	  "\\u0007\"}}", "t.json:1:262: vllm.model: a control character "
	  "(\\x1b) at character 4: a path or a name has none" },
	{ "{" SSH ",\"container\":{\"image\":\"i\",\"volumes\":[\"/a:/b\","
	  "\"/c\\n:/d\"]}," NODES "," VLLM "}", "t.json:1:100: "
	  "container.volumes[1]: a control character (\\x0a) at character 3: "
	  "a path or a name has none" },
	{ "{\"ssh\":{\"identity_file\":\"/k\",\"known_hosts_file\":\"/k\\th\"}"
	  "," CTR "," NODES "," VLLM "}", "t.json:1:49: ssh.known_hosts_file: "
	  "a control character (\\x09) at character 3: a path or a name has "
	  "none" },
	/* Positions on a multi-line file, as an operator sees them. */
	{ "{\n  \"ssh\": {\"identity_file\": \"/k\", \"known_hosts_file\": "
	  "\"/kh\"},\n  \"container\": {\"image\": \"img\"},\n  \"nodes\": [\n"
	  "    {\"name\": \"a\", \"role\": \"head\", \"ssh_host\": \"h1\",\n"
	  "     \"ip\": \"10.0.0.1\", \"ifname\": \"eth0\"},\n"
	  "    {\"name\": \"b\", \"role\": \"worker\", \"ssh_host\": \"h2\",\n"
	  "     \"ip\": \"10.0.0.300\", \"ifname\": \"eth0\"}\n  ],\n"
	  "  \"vllm\": {\"model\": \"/m\"}\n}\n",
	  "t.json:8:12: nodes[1].ip: not an IPv4 address" },
};

static void
test_bad(void **state)
{
	/* the index, not a pointer: the table is const */
	const struct bad *b = &bad[(uintptr_t)*state];
	char err[ERRLEN] = "";
	struct config *cf;

	cf = config_parse(b->json, "t.json", err, sizeof(err));
	assert_null(cf);
	assert_string_equal(err, b->want);
}

static void
test_defaults(void **state)
{
	char err[ERRLEN] = "";
	struct config *cf;

	(void)state;
	cf = config_parse("{" BASE "}", "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_string_equal(cf->name, "tandem");
	assert_string_equal(cf->listen_host, "127.0.0.1");
	assert_int_equal(cf->listen_port, 9100);
	assert_int_equal(cf->topology, TOPO_RAY);
	assert_string_equal(cf->ssh.user, "root");
	assert_int_equal(cf->ssh.port, 22);
	assert_true(cf->ssh.connect_timeout_s == 5);
	assert_string_equal(cf->container.engine, "docker");
	assert_string_equal(cf->container.shm_size, "16g");
	assert_string_equal(cf->nodes[0].container_name, "vllm-head");
	assert_string_equal(cf->nodes[1].container_name, "vllm-worker");
	assert_int_equal(cf->nodes[1].ssh_port, 22);
	assert_int_equal(cf->ray.port, 6379);
	assert_int_equal(cf->ray.expect_nodes, 2);
	assert_int_equal(cf->ray.expect_gpus, 2);
	assert_int_equal(cf->vllm.port, 8000);
	assert_string_equal(cf->vllm.url, "http://127.0.0.1:8000");
	assert_string_equal(cf->vllm.log_file, "/tmp/vllm_serve.log");
	assert_true(cf->vllm.ready_timeout_s == 1800);
	assert_int_equal(cf->dp.size, 2);
	assert_int_equal(cf->dp.rpc_port, 13389);
	assert_int_equal(cf->dp.seed, 1024);
	assert_true(cf->probe.interval_s == 5);
	assert_int_equal(cf->probe.failures_to_degrade, 2);
	assert_true(cf->recovery.backoff_max_s == 300);
	assert_int_equal(cf->recovery.max_rebuilds_per_hour, 10);
	assert_false(cf->systemd.ready_when_serving);
	assert_false(cf->systemd.on_stop_teardown);
	assert_string_equal(config_model_id(cf), "/m");
	config_free(cf);
}

static void
test_derived(void **state)
{
	char err[ERRLEN] = "";
	struct config *cf;
	char *s;

	(void)state;
	cf = config_parse("{" SSH "," CTR ",\"nodes\":[" N1 "," N2 ",{\"name\":"
	    "\"c\",\"role\":\"worker\",\"ssh_host\":\"h3\",\"ip\":\"10.0.0.3\","
	    "\"ifname\":\"ib0\",\"env\":{\"HCCL_IF_IP\":\"{ip}/{ifname}/{name}/"
	    "{rank}\"}}],\"vllm\":{\"model\":\"/m\",\"args\":["
	    "\"--tensor-parallel-size=4\",\"-pp\",\"2\","
	    "\"--gpu-memory-utilization\",\"0.6\"]}}", "t.json", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->ray.expect_gpus, 8);
	assert_int_equal(cf->ray.expect_nodes, 3);
	assert_true(cf->vllm.gpu_memory_utilization == 0.6);
	assert_string_equal(cf->nodes[2].container_name, "vllm-worker-2");
	s = config_expand(cf->nodes[2].env.v[0].val, &cf->nodes[2]);
	assert_string_equal(s, "10.0.0.3/ib0/c/2");
	free(s);
	config_free(cf);
}

/*
 * container.accelerator: nvidia by default, ascend when extra_args pass a
 * /dev/davinci device, as set otherwise; the derived variables follow it,
 * and a hand-set one is dropped with a warning when it is the very
 * template tandem uses, refused otherwise.
 */
static void
test_accelerator(void **state)
{
	char err[ERRLEN] = "";
	struct config *cf;

	(void)state;
	cf = config_parse("{" BASE "}", "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.accelerator, ACCEL_NVIDIA);
	config_free(cf);
	cf = config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"extra_args\":[\"--device\",\"/dev/davinci0\"]}," NODES ","
	    VLLM "}", "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.accelerator, ACCEL_ASCEND);
	config_free(cf);
	/* set by hand, it wins over the rule */
	cf = config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"accelerator\":\"none\",\"extra_args\":[\"--device\","
	    "\"/dev/davinci0\"]}," NODES "," VLLM "}", "t.json", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.accelerator, ACCEL_NONE);
	config_free(cf);
	/* the guide's templates: redundant, dropped with a warning */
	cf = config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"accelerator\":\"ascend\",\"env\":{\"HCCL_IF_IP\":\"{ip}\","
	    "\"TASK_QUEUE_ENABLE\":\"1\"}},\"nodes\":[" N1 "," "{\"name\":"
	    "\"b\",\"role\":\"worker\",\"ssh_host\":\"h2\",\"ip\":"
	    "\"10.0.0.2\",\"ifname\":\"eth0\",\"env\":{"
	    "\"TP_SOCKET_IFNAME\":\"{ifname}\"}}]," VLLM "}", "t.json", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.env.n, 1);
	assert_string_equal(cf->container.env.v[0].key, "TASK_QUEUE_ENABLE");
	assert_int_equal(cf->nodes[1].env.n, 0);
	assert_int_equal(cf->warnings.n, 2);
	assert_string_equal(cf->warnings.v[0], "t.json:1:124: "
	    "container.env.HCCL_IF_IP: tandem derives HCCL_IF_IP={ip} from the "
	    "node's ip; this entry is redundant and ignored (remove it)");
	config_free(cf);
	/* another value: refused */
	assert_null(config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"accelerator\":\"ascend\",\"env\":{\"HCCL_IF_IP\":"
	    "\"10.0.0.9\"}}," NODES "," VLLM "}", "t.json", err,
	    sizeof(err)));
	assert_string_equal(err, "t.json:1:124: container.env.HCCL_IF_IP: is "
	    "derived from the node's ip and ifname; remove it");
	assert_null(config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"extra_args\":[\"--device=/dev/davinci0\"],\"env\":{"
	    "\"ASCEND_RT_VISIBLE_DEVICES\":\"0\"}}," NODES "," VLLM "}",
	    "t.json", err, sizeof(err)));
	assert_string_equal(err, "t.json:1:156: container.env."
	    "ASCEND_RT_VISIBLE_DEVICES: is derived from the /dev/davinci "
	    "devices in container.extra_args; remove it");
	/* with nvidia the HCCL variables are the operator's own */
	cf = config_parse("{" SSH ",\"container\":{\"image\":\"i\","
	    "\"env\":{\"HCCL_IF_IP\":\"10.0.0.9\"}}," NODES "," VLLM "}",
	    "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->container.env.n, 1);
	config_free(cf);
}

/* The guides' own command lines, pasted: what tandem sets anyway is
 * dropped with a warning each; the rest reaches vllm serve unchanged. */
static void
test_guide_flags(void **state)
{
	char err[ERRLEN] = "";
	struct config *cf;

	(void)state;
	cf = config_parse("{" BASE_NOVLLM ",\"vllm\":{\"model\":\"/m\","
	    "\"args\":[\"--tensor-parallel-size\",\"2\","
	    "\"--distributed-executor-backend\",\"ray\",\"--host\",\"0.0.0.0\","
	    "\"--port\",\"8000\",\"--max-model-len\",\"2048\","
	    "\"--gpu-memory-utilization\",\"0.60\"]}}", "t.json", err,
	    sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->warnings.n, 3);
	assert_string_equal(cf->warnings.v[2], "t.json:1:362: vllm.args[6]: "
	    "--port 8000 is what tandem sets from vllm.port; the flag is "
	    "redundant and ignored");
	assert_int_equal(cf->vllm.args.n, 6);
	assert_string_equal(cf->vllm.args.v[0], "--tensor-parallel-size");
	assert_string_equal(cf->vllm.args.v[2], "--max-model-len");
	assert_string_equal(cf->vllm.args.v[4], "--gpu-memory-utilization");
	assert_int_equal(cf->ray.expect_gpus, 2);
	config_free(cf);

	cf = config_parse("{" BASE_NOVLLM ",\"topology\":\"dp\",\"vllm\":{"
	    "\"model\":\"/m\",\"args\":[\"--data-parallel-size\",\"2\","
	    "\"--tensor-parallel-size\",\"8\",\"--data-parallel-size-local=1\","
	    "\"--api-server-count=2\",\"--data-parallel-address=10.0.0.1\","
	    "\"--data-parallel-rpc-port=13389\",\"--seed=1024\","
	    "\"--enable-expert-parallel\"]}}", "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->warnings.n, 6);
	assert_int_equal(cf->vllm.args.n, 3);
	assert_string_equal(cf->vllm.args.v[0], "--tensor-parallel-size");
	assert_string_equal(cf->vllm.args.v[1], "8");
	assert_string_equal(cf->vllm.args.v[2], "--enable-expert-parallel");
	config_free(cf);

	/*
	 * ready_when "serving" once made boots and upgrades wait on the
	 * cluster: still loads, with a warning that says what to use.
	 */
	cf = config_parse("{" BASE ",\"systemd\":{\"ready_when\":\"serving\"}}",
	    "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->warnings.n, 1);
	assert_non_null(strstr(cf->warnings.v[0], "systemd.ready_when: "
	    "\"serving\" is no longer honoured"));
	assert_non_null(strstr(cf->warnings.v[0], "tandemctl wait serving"));
	config_free(cf);
	cf = config_parse("{" BASE ",\"systemd\":{\"ready_when\":\"started\"}}",
	    "t.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->warnings.n, 0);
	config_free(cf);

	/* Nothing to warn about in the shipped examples. */
	cf = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(cf);
	assert_int_equal(cf->warnings.n, 0);
	config_free(cf);
}

static void
test_examples(void **state)
{
	char err[ERRLEN] = "";
	struct config *a, *b;

	(void)state;
	a = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(a);
	b = conffile_load("etc/tandem-dp.json", err, sizeof(err));
	assert_non_null(b);
	assert_int_equal(b->topology, TOPO_DP);
	assert_int_equal(b->dp.api_server_count, 2);
	assert_true(config_cluster_changed(a, b));
	assert_false(config_cluster_changed(a, a));
	/* the bytes it came from, for the state dir's last-good.json */
	assert_non_null(a->text);
	assert_non_null(strstr(a->text, "\"nodes\""));
	/* ssh.* changes re-make the sessions, never the containers */
	assert_false(config_ssh_changed(a, a));
	b->ssh.keepalive_s = a->ssh.keepalive_s + 1;
	assert_true(config_ssh_changed(a, b));
	config_free(b);
	b = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(b);
	assert_false(config_cluster_changed(a, b));
	assert_false(config_ssh_changed(a, b));
	b->ssh.connect_timeout_s = 1;
	assert_true(config_ssh_changed(a, b));
	assert_false(config_cluster_changed(a, b));
	/* issue 46: what the containers run is checked first; the nodes
	 * and their sessions must stay for the check to run on them */
	assert_false(config_change_differs(a, b));
	assert_true(config_nodes_changed(a, b));
	b->ssh.connect_timeout_s = a->ssh.connect_timeout_s;
	assert_false(config_nodes_changed(a, b));
	free(b->container.image);
	b->container.image = xstrdup("vllm/vllm-openai:other");
	assert_true(config_change_differs(a, b));
	assert_true(config_cluster_changed(a, b));
	assert_false(config_nodes_changed(a, b));
	config_free(b);
	b = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(b);
	free(b->vllm.model);
	b->vllm.model = xstrdup("/models/other");
	assert_true(config_change_differs(a, b));
	config_free(b);
	b = conffile_load("etc/tandem.json", err, sizeof(err));
	assert_non_null(b);
	free(b->nodes[0].ip);
	b->nodes[0].ip = xstrdup("192.0.2.99");
	assert_true(config_nodes_changed(a, b));
	assert_false(config_change_differs(a, b));
	config_free(a);
	config_free(b);
	assert_null(conffile_load("etc/does-not-exist.json", err, sizeof(err)));
	assert_string_equal(err, "etc/does-not-exist.json: No such file or "
	    "directory");
}

/* A file of N bytes of TEXT repeated; returns its path. */
static char *
temp_file(const char *text, size_t len, size_t n)
{
	char *path = xstrdup("/tmp/tandem-test-config.XXXXXX");
	int fd = mkstemp(path);
	FILE *fp;
	size_t i;

	assert_true(fd >= 0);
	fp = fdopen(fd, "w");
	assert_non_null(fp);
	for (i = 0; i < n; i++)
		assert_int_equal(fwrite(text, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
	return path;
}

/* The daemon's reader: what it refuses before the parser sees a byte. */
static void
test_conffile(void **state)
{
	char err[ERRLEN], *path, *want;
	char line[1024];

	(void)state;
	assert_null(conffile_load("etc", err, sizeof(err)));
	assert_string_equal(err, "etc: Is a directory");

	path = temp_file("{\"name\":\0\"x\"}", 13, 1);
	assert_null(conffile_load(path, err, sizeof(err)));
	want = xprintf("%s: contains a NUL byte", path);
	assert_string_equal(err, want);
	free(want);
	unlink(path);
	free(path);

	memset(line, ' ', sizeof(line));
	path = temp_file(line, sizeof(line), CONFFILE_MAX / sizeof(line) + 1);
	assert_null(conffile_load(path, err, sizeof(err)));
	want = xprintf("%s: larger than 4 MiB; not a tandem config", path);
	assert_string_equal(err, want);
	free(want);
	unlink(path);
	free(path);

	path = temp_file("", 0, 0);
	assert_null(conffile_load(path, err, sizeof(err)));
	want = xprintf("%s:1:0: '[' or '{' expected near end of file", path);
	assert_string_equal(err, want);
	free(want);
	unlink(path);
	free(path);
}

static void
args_with_gmu(const char *const *in, double gmu, const char *want)
{
	struct strv a, out;
	struct sbuf b;
	size_t i;

	strv_init(&a);
	strv_init(&out);
	for (i = 0; in[i]; i++)
		strv_add(&a, in[i]);
	vllmargs_with_gmu(&a, gmu, &out);
	sbuf_init(&b);
	for (i = 0; i < out.n; i++)
		sbuf_addf(&b, "%s%s", i ? " " : "", out.v[i]);
	assert_string_equal(b.s ? b.s : "", want);
	sbuf_free(&b);
	strv_free(&a);
	strv_free(&out);
}

/* The one reader of vllm.args, as plan.c and config_parse use it. */
static void
test_vllmargs(void **state)
{
	static const char *const spaced[] = { "-tp", "2",
	    "--gpu-memory-utilization", "0.9", "--x", NULL };
	static const char *const joined[] = { "--gpu-memory-utilization=0.9",
	    "--gpu-memory-utilization", "0.8", NULL };
	static const char *const none[] = { "--x", NULL };
	static const char *const dangling[] = { "--gpu-memory-utilization",
	    NULL };
	static const char *const empty[] = { NULL };
	struct strv a;

	(void)state;
	args_with_gmu(spaced, 0, "-tp 2 --gpu-memory-utilization 0.9 --x");
	args_with_gmu(spaced, 0.6, "-tp 2 --gpu-memory-utilization 0.6 --x");
	args_with_gmu(joined, 0.5, "--gpu-memory-utilization=0.5 "
	    "--gpu-memory-utilization 0.5");
	args_with_gmu(none, 0.5, "--x --gpu-memory-utilization 0.5");
	args_with_gmu(dangling, 0.5, "--gpu-memory-utilization "
	    "--gpu-memory-utilization 0.5");
	args_with_gmu(empty, 0, "");

	strv_init(&a);
	assert_int_equal(vllmargs_gpus(&a, 3), 3);
	strv_add(&a, "-pp");
	strv_add(&a, "2");
	assert_int_equal(vllmargs_gpus(&a, 3), 3);	/* no tensor size */
	strv_add(&a, "--tensor-parallel-size=4");
	assert_int_equal(vllmargs_gpus(&a, 3), 8);
	assert_string_equal(vllmargs_value(&a, "--pipeline-parallel-size",
	    "-pp"), "2");
	assert_null(vllmargs_value(&a, "--pipeline-parallel-size", NULL));
	strv_free(&a);
}

int
main(void)
{
	struct CMUnitTest tests[sizeof(bad) / sizeof(bad[0]) + 7];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct CMUnitTest t = cmocka_unit_test_prestate(test_bad,
		    (void *)(uintptr_t)i);

		t.name = bad[i].want;
		tests[i] = t;
	}
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_defaults);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_derived);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_guide_flags);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_accelerator);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_examples);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_conffile);
	tests[i++] = (struct CMUnitTest)cmocka_unit_test(test_vllmargs);
	return _cmocka_run_group_tests("config", tests, i, NULL, NULL);
}
