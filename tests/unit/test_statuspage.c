/* The status page's server-side rendering: markers, escaping, the data block. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "statuspage.h"

#define NOW 1796287948.0

static char *
render(const char *html, const char *status_json, const char *events_json,
    int want_rc)
{
	struct page_tmpl t = { html, strlen(html), "CSS", 3, "JS", 2 };
	json_t *st = json_loads(status_json, 0, NULL);
	json_t *ev = json_loads(events_json, 0, NULL);
	char err[ERRLEN] = "";
	struct sbuf b;
	int rc;

	assert_non_null(st);
	assert_non_null(ev);
	sbuf_init(&b);
	rc = statuspage_render(&b, &t, st, ev, "n0nce", NOW, err, sizeof(err));
	json_decref(st);
	json_decref(ev);
	assert_int_equal(rc, want_rc);
	if (rc == -1) {
		sbuf_free(&b);
		return xstrdup(err);
	}
	return b.s ? sbuf_take(&b) : xstrdup("");
}

static int
count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle)) != NULL) {
		n++;
		s += strlen(needle);
	}
	return n;
}

static const char *SERVING =
    "{\"name\":\"spark\",\"state\":\"serving\",\"action\":\"idle\","
    "\"mode\":\"auto\",\"since\":\"2026-12-02T10:23:19Z\",\"generation\":3,"
    "\"diagnosis\":null,\"nodes\":[{\"name\":\"spark-head\",\"role\":\"head\","
    "\"ssh_host\":\"192.168.110.32\",\"ip\":\"10.10.10.1\",\"reachable\":true,"
    "\"container\":\"running\",\"ray_alive\":true,\"gpus\":1,"
    "\"last_error\":null},{\"name\":\"spark-worker\",\"role\":\"worker\","
    "\"ssh_host\":\"192.168.110.97\",\"ip\":\"10.10.10.2\",\"reachable\":"
    "false,\"container\":\"unknown\",\"ray_alive\":null,\"gpus\":null,"
    "\"last_error\":\"<img src=x onerror=alert(1)>\"}],"
    "\"ray\":{\"alive_nodes\":2,\"expect_nodes\":2,\"gpus\":2.0,"
    "\"expect_gpus\":2},\"vllm\":{\"url\":\"http://127.0.0.1:8000\","
    "\"model\":\"/model/qwen\",\"healthy\":true,"
    "\"gpu_memory_utilization\":0.6},\"recovery\":{\"attempt\":0,"
    "\"next_attempt_s\":0.0,\"rebuilds_last_hour\":1,\"halted\":false}}";

static void
test_escape(void **state)
{
	struct sbuf b;

	(void)state;
	sbuf_init(&b);
	html_escape(&b, "<a href='x'>\"&amp;\"</a>");
	assert_string_equal(b.s, "&lt;a href=&#39;x&#39;&gt;&quot;&amp;amp;"
	    "&quot;&lt;/a&gt;");
	sbuf_free(&b);
}

static void
test_markers(void **state)
{
	char *s;

	(void)state;
	s = render("<style nonce=\"{{nonce}}\">{{css}}</style><title>{{title}}"
	    "</title>{{js}}|{{now}}|{{diag_hidden}}|{{warn_hidden}}|", SERVING,
	    "[]", 0);
	assert_string_equal(s, "<style nonce=\"n0nce\">CSS</style><title>"
	    "spark: serving · tandem</title>JS|2026-12-03 08:52:28| hidden|"
	    " hidden|");
	free(s);
	/* a marker the code does not know is a bug in the template */
	s = render("a {{nope}} b", SERVING, "[]", -1);
	assert_non_null(strstr(s, "{{nope}}"));
	free(s);
	/* text after the last marker, and a lone "{{", pass through */
	s = render("{{name}} {{ x", SERVING, "[]", 0);
	assert_string_equal(s, "spark {{ x");
	free(s);
}

static void
test_summary_and_nodes(void **state)
{
	char *s;

	(void)state;
	s = render("{{summary}}", SERVING, "[]", 0);
	assert_non_null(strstr(s, "<span id=\"state\" class=\"badge "
	    "st-serving\">serving</span>"));
	assert_non_null(strstr(s, "<span id=\"action\" class=\"badge "
	    "act-idle\">idle</span>"));
	assert_non_null(strstr(s, "<time datetime=\"2026-12-02T10:23:19Z\">"
	    "2026-12-02 10:23:19 UTC</time>"));
	assert_non_null(strstr(s, "<dd id=\"generation\">3</dd>"));
	assert_null(strstr(s, "next attempt"));
	free(s);
	s = render("{{nodes}}", SERVING, "[]", 0);
	/* remote text is escaped, never markup */
	assert_null(strstr(s, "<img"));
	assert_non_null(strstr(s, "&lt;img src=x onerror=alert(1)&gt;"));
	assert_non_null(strstr(s, "<th scope=\"row\">spark-head</th>"));
	assert_non_null(strstr(s, "<td class=\"bad\">no</td><td class="
	    "\"ctr-unknown\">unknown</td><td class=\"none\">—</td><td>—</td>"));
	assert_int_equal(count(s, "<tr>"), 2);
	free(s);
	s = render("{{services}}", SERVING, "[]", 0);
	assert_non_null(strstr(s, "2 of 2 nodes alive · 2 of 2 GPUs"));
	assert_non_null(strstr(s, "0.6"));
	free(s);
}

/* The devices column says NPUs for an Ascend cluster, GPUs by default. */
static void
test_devices_word(void **state)
{
	char *s;

	(void)state;
	s = render("<th>{{devices}}</th>", SERVING, "[]", 0);
	assert_string_equal(s, "<th>GPUs</th>");
	free(s);
	s = render("<th>{{devices}}</th>", "{\"accelerator\":\"ascend\"}",
	    "[]", 0);
	assert_string_equal(s, "<th>NPUs</th>");
	free(s);
	s = render("<th>{{devices}}</th>", "{\"accelerator\":\"none\"}",
	    "[]", 0);
	assert_string_equal(s, "<th>devices</th>");
	free(s);
}

static void
test_hostile_status(void **state)
{
	char *s;

	(void)state;
	/* a state that is not one of ours does not reach a class attribute */
	s = render("{{summary}}", "{\"state\":\"x\\\" onclick=\\\"y\","
	    "\"action\":\"backoff\",\"recovery\":{\"attempt\":2,"
	    "\"next_attempt_s\":7.4,\"halted\":true}}", "[]", 0);
	assert_non_null(strstr(s, "class=\"badge st-unknown\">x&quot; "
	    "onclick=&quot;y</span>"));
	assert_non_null(strstr(s, "<dd id=\"next-attempt\">7 s</dd>"));
	assert_non_null(strstr(s, "<dd id=\"attempt\">2</dd>"));
	assert_non_null(strstr(s, "stopped: fix the cause"));
	assert_null(strstr(s, "restart budget"));
	free(s);
	/* stopped: what the recheck awaits, escaped */
	s = render("{{summary}}", "{\"recovery\":{\"halted\":true,"
	    "\"awaiting\":{\"message\":\"node2 link: MTU <9000>\"}}}", "[]",
	    0);
	assert_non_null(strstr(s, "<dd id=\"awaiting\">node2 link: MTU "
	    "&lt;9000&gt;</dd>"));
	free(s);
	/* after the cap: the budget's sentence, escaped */
	s = render("{{summary}}", "{\"state\":\"degraded\",\"budget\":{"
	    "\"capped\":true,\"text\":\"10 rebuilds <b>\"}}", "[]", 0);
	assert_non_null(strstr(s, "<dd id=\"budget\">10 rebuilds &lt;b&gt;"
	    "</dd>"));
	free(s);
	/* issue 46: which config runs, and why it is not the file's */
	s = render("{{summary}}", "{\"config\":{\"running\":"
	    "\"last-known-good\",\"message\":\"rolled back <because>\"}}",
	    "[]", 0);
	assert_non_null(strstr(s, "<dd id=\"config-running\">last-known-good: "
	    "rolled back &lt;because&gt;</dd>"));
	free(s);
	s = render("{{summary}}", "{\"config\":{\"running\":\"file\","
	    "\"message\":null}}", "[]", 0);
	assert_non_null(strstr(s, "<dd id=\"config-running\">file</dd>"));
	free(s);
	/* nothing at all: dashes, no crash */
	s = render("{{title}}{{summary}}{{nodes}}{{services}}{{diagnosis}}"
	    "{{warnings}}", "{}", "[]", 0);
	assert_non_null(strstr(s, "—: — · tandem"));
	free(s);
	s = render("{{diag_hidden}}|{{diagnosis}}|{{warn_hidden}}|{{warnings}}",
	    "{\"diagnosis\":{\"code\":\"oom\",\"message\":\"CUDA out of "
	    "memory <b>\",\"remedy\":\"lower --gpu-memory-utilization\"},"
	    "\"warnings\":[{\"code\":\"foreign\",\"node\":\"w1\",\"message\":"
	    "\"a <script> runs\"}]}", "[]", 0);
	assert_string_equal(s, "|<p><code class=\"code\">oom</code> <span "
	    "class=\"msg\">CUDA out of memory &lt;b&gt;</span></p><p class="
	    "\"remedy\"><b>Remedy:</b> lower --gpu-memory-utilization</p>||"
	    "<li><code>foreign</code> <b>w1</b>: a &lt;script&gt; runs</li>");
	free(s);
}

/*
 * The data block may hold any reason text: "</script>" or "<!--" there
 * would end or derail the block; the escaped form still parses to the same.
 */
static void
test_data_block(void **state)
{
	char *s, ev[1024];
	json_t *d;

	(void)state;
	snprintf(ev, sizeof(ev), "[{\"seq\":1,\"time\":%f,\"to\":\"absent\"},"
	    "{\"seq\":2,\"time\":%f,\"to\":\"serving\"},{\"seq\":3,\"time\":%f,"
	    "\"to\":\"degraded\",\"reason\":\"</script><!--<script> & >\"}]",
	    NOW - 2 * PAGE_HISTORY_S, NOW - PAGE_HISTORY_S - 5, NOW - 60);
	s = render("{{data}}", SERVING, ev, 0);
	assert_null(strchr(s, '<'));
	assert_null(strchr(s, '>'));
	assert_null(strchr(s, '&'));
	assert_non_null(strstr(s, "\\u003c/script\\u003e\\u003c!--"));
	d = json_loads(s, 0, NULL);
	assert_non_null(d);
	/* the oldest event is beyond the page's history; the one before it is kept */
	assert_int_equal(json_array_size(json_object_get(d, "events")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(d, "events"), 0), "seq")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(d, "events"), 1), "reason")),
	    "</script><!--<script> & >");
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    d, "status"), "state")), "serving");
	json_decref(d);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_summary_and_nodes),
		cmocka_unit_test(test_devices_word),
		cmocka_unit_test(test_hostile_status),
		cmocka_unit_test(test_data_block),
	};

	return cmocka_run_group_tests_name("statuspage", tests, NULL, NULL);
}
