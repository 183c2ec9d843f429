/*
 * libFuzzer: what nodes print to tandemctl init and the link check: ip -j
 * addr and the speeds (then the fast-link choice on two nodes that both
 * said it), the link state, ping, and init's other answers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "discover.h"
#include "linkcheck.h"
#include "netinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char *text = malloc(n + 1), err[512], name[64];
	struct net_ifaces ifs;
	struct link_state st;
	struct ping_res pr;
	struct node_facts f;
	struct strv v;
	double share;

	memcpy(text, data, n);
	text[n] = '\0';
	if (net_parse_ip_addr(text, n, &ifs, err, sizeof(err)) == 0) {
		struct link_node nodes[2] = { { "a", &ifs, NULL },
		    { "b", &ifs, "10.10.10.1" } };
		struct link_choice *c;
		size_t k;

		net_parse_speeds(text, &ifs);
		/* the same addresses on both: never a link */
		k = link_choices(nodes, 2, &c);
		if (k != 0)
			abort();
		link_choices_free(c, k);
		net_ifaces_free(&ifs);
	}
	linkcheck_state(0, text, "", "enp1s0f0np0", "10.10.10.1", &st);
	linkcheck_state(1, "", text, "enp1s0f0np0", "10.10.10.1", &st);
	linkcheck_ping(0, text, "", &pr);
	linkcheck_ping(1, "", text, &pr);
	facts_parse(text, &f);
	gpus_parse(text, name, sizeof(name));
	share = gpu_free_share(text);
	if (share > 1 || (share < 0 && share != -1))
		abort();
	strv_init(&v);
	images_parse(text, &v);
	dirs_parse(text, &v);
	strv_free(&v);
	free(text);
	return 0;
}
