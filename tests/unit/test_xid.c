/*
 * Xid lines and ECC counts as recorded in tests/unit/data/nvidia-xid/
 * (README there): what is read, how it is classified, what is left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"
#include "xid.h"

#include "slurp.h"

#define DATA "tests/unit/data/nvidia-xid/"

static void
scan_file(const char *name, double since, struct xid_scan *sc)
{
	char path[256];
	char *text;

	snprintf(path, sizeof(path), DATA "%s", name);
	text = slurp(path);
	xid_scan(text, strlen(text), since, sc);
	free(text);
}

static void
test_fallen_off_with_154(void **state)
{
	struct xid_scan sc;
	const struct xid_event *w;

	(void)state;
	scan_file("dmesg-T-fallen-154.txt", 0, &sc);
	assert_int_equal(sc.n, 2);
	assert_int_equal(sc.ev[0].code, 79);
	assert_string_equal(sc.ev[0].pci, "0000:02:00");
	assert_int_equal(sc.ev[0].cls, XID_FATAL);
	assert_string_equal(sc.ev[0].line, "NVRM: Xid (PCI:0000:02:00): 79, "
	    "pid=9962, name=python, GPU has fallen off the bus.");
	assert_true(sc.ev[0].t == 0);	/* dmesg -T: local time, no zone */
	assert_int_equal(sc.ev[1].code, 154);
	assert_int_equal(sc.ev[1].cls, XID_FATAL);
	w = xid_worst(&sc);
	assert_int_equal(w->code, 79);
	/* no "tandem:" line: not our command's whole answer */
	assert_int_equal(sc.unreadable, 1);
}

/* The line after the Xid says it again: one event per GPU and code. */
static void
test_repeats_are_one_event(void **state)
{
	struct xid_scan sc;

	(void)state;
	scan_file("journal-fallen-os-reboot.txt", 0, &sc);
	assert_int_equal(sc.n, 2);
	assert_int_equal(sc.ev[0].code, 79);
	assert_string_equal(sc.ev[0].pci, "0000:01:00");
	assert_int_equal(sc.ev[1].code, 154);
	assert_int_equal(sc.ev[1].cls, XID_FATAL);	/* 0x2 (OS Reboot) */
	scan_file("dmesg-T-xid13-109.txt", 0, &sc);
	assert_int_equal(sc.n, 2);
	assert_int_equal(sc.ev[0].code, 13);
	assert_int_equal(sc.ev[0].cls, XID_APP);
	assert_int_equal(sc.ev[1].code, 109);
	assert_int_equal(sc.ev[1].cls, XID_UNKNOWN);
	assert_int_equal(xid_worst(&sc)->code, 109);
}

static void
test_fallen_off_without_xid(void **state)
{
	struct xid_scan sc;

	(void)state;
	scan_file("dmesg-fallen-no-xid-570.txt", 0, &sc);
	assert_int_equal(sc.n, 1);
	assert_int_equal(sc.ev[0].code, 79);
	assert_string_equal(sc.ev[0].pci, "0000:b3:00");
	assert_int_equal(sc.ev[0].cls, XID_FATAL);
	assert_string_equal(sc.ev[0].line, "NVRM: fallen off the bus and is "
	    "not responding to commands.");
}

static void
test_gsp(void **state)
{
	struct xid_scan sc;

	(void)state;
	scan_file("dmesg-T-xid119.txt", 0, &sc);
	assert_int_equal(sc.n, 1);
	assert_int_equal(sc.ev[0].code, 119);
	assert_int_equal(sc.ev[0].cls, XID_FATAL);
	scan_file("mixed-xid120-154.txt", 0, &sc);
	assert_int_equal(sc.n, 2);
	assert_int_equal(sc.ev[0].code, 120);
	assert_string_equal(sc.ev[0].pci, "0000:2a:00");
	assert_int_equal(sc.ev[1].cls, XID_FATAL);
}

static void
test_other_shapes(void **state)
{
	struct xid_scan sc;

	(void)state;
	scan_file("shapes.txt", 0, &sc);
	assert_int_equal(sc.n, 5);
	assert_int_equal(sc.ev[0].code, 14);
	assert_string_equal(sc.ev[0].pci, "0000:03:00");
	assert_int_equal(sc.ev[0].cls, XID_UNKNOWN);
	assert_int_equal(sc.ev[1].code, 79);
	assert_string_equal(sc.ev[1].pci, "0000:c6:00");
	assert_int_equal(sc.ev[2].code, 154);
	assert_int_equal(sc.ev[2].cls, XID_FATAL);	/* Drain and Reset */
	assert_int_equal(sc.ev[3].code, 51);
	assert_int_equal(sc.ev[4].cls, XID_FATAL);	/* PF FLR */
}

/* What tandem's command prints, with times, from journalctl. */
static void
test_our_command(void **state)
{
	struct xid_scan sc;
	char msg[512];

	(void)state;
	scan_file("tandem-journalctl.txt", 0, &sc);
	assert_int_equal(sc.source, KLOG_JOURNALCTL);
	assert_int_equal(sc.unreadable, 0);
	assert_int_equal(sc.n, 3);
	assert_string_equal(sc.ev[0].pci, "000f:01:00");
	/* 2026-11-02T08:14:03+0000 */
	assert_true(sc.ev[0].t == 1793607243.0);
	assert_int_equal(sc.ev[1].code, 43);
	assert_int_equal(sc.ev[1].cls, XID_APP);
	assert_int_equal(xid_worst(&sc)->code, 79);
	xid_describe(xid_worst(&sc), "spark-2", 0, msg, sizeof(msg));
	assert_string_equal(msg, "spark-2 GPU 0 (PCI 000f:01:00): Xid 79, GPU "
	    "has fallen off the bus: NVRM: Xid (PCI:000f:01:00): 79, pid=4388, "
	    "name=python3, GPU has fallen off the bus.");
	/* since: only what came after the last read */
	scan_file("tandem-journalctl.txt", 1793607243.0 + 60, &sc);
	assert_int_equal(sc.n, 2);
	assert_int_equal(sc.ev[0].code, 43);
	scan_file("tandem-dmesg-iso.txt", 0, &sc);
	assert_int_equal(sc.source, KLOG_DMESG);
	assert_int_equal(sc.n, 1);
	assert_int_equal(sc.ev[0].cls, XID_APP);	/* 94, contained */
	assert_true(sc.ev[0].t == 1793607243.0);
	scan_file("tandem-dmesg-iso.txt", 1793607244.0, &sc);
	assert_int_equal(sc.n, 0);
}

static void
test_refused_and_empty(void **state)
{
	struct xid_scan sc;

	(void)state;
	scan_file("tandem-dmesg-refused.txt", 0, &sc);
	assert_int_equal(sc.unreadable, 1);
	assert_string_equal(sc.why, "dmesg: read kernel buffer failed: "
	    "Operation not permitted");
	scan_file("tandem-journal-refused.txt", 0, &sc);
	assert_int_equal(sc.unreadable, 1);
	assert_string_equal(sc.why, "Hint: You are currently not seeing "
	    "messages from other users and the system.");
	assert_int_equal(sc.n, 0);
	scan_file("tandem-journal-empty.txt", 0, &sc);
	assert_int_equal(sc.unreadable, 0);
	assert_int_equal(sc.n, 0);
	assert_null(xid_worst(&sc));
	xid_scan("", 0, 0, &sc);
	assert_int_equal(sc.unreadable, 1);
	assert_string_equal(sc.why, "no answer from the kernel log command");
}

static void
test_garbage(void **state)
{
	struct xid_scan sc;
	static const char junk[] =
	    "NVRM: Xid (PCI:0000:02:00): 79\n"		/* no ", " */
	    "NVRM: Xid (PCI:0000:02:00): abc, x\n"
	    "NVRM: Xid (PCI:zz): 48, name=\xff\xfe\x01, Double Bit\n"
	    "NVRM: Xid (PCI:0000:02:00 79, x\n"
	    "NVRM: Xid (\n"
	    "\0\0NVRM: Xid (PCI:0000:05:00): 95, \xc3\x28 bad utf8\n"
	    "tandem: dmesg";
	struct sbuf b;
	size_t i;

	(void)state;
	xid_scan(junk, sizeof(junk) - 1, 0, &sc);
	assert_int_equal(sc.n, 3);
	assert_int_equal(sc.ev[0].code, 79);	/* the code is all it needs */
	assert_int_equal(sc.ev[1].code, 48);
	assert_string_equal(sc.ev[1].pci, "");
	assert_int_equal(sc.ev[2].code, 95);
	for (i = 0; i < sc.n; i++)
		assert_true(strlen(sc.ev[i].line) < XID_LINE_MAX);
	/* a huge line and more events than kept */
	sbuf_init(&b);
	for (i = 0; i < 40; i++)
		sbuf_addf(&b, "NVRM: Xid (PCI:0000:%02zx:00): 13, %s\n", i,
		    i == 3 ? "x" : "y");
	for (i = 0; i < 200000; i++)
		sbuf_addc(&b, 'z');
	sbuf_add(&b, " NVRM: Xid (PCI:0000:01:00): 79, end\ntandem: dmesg\n");
	xid_scan(b.s, b.len, 0, &sc);
	assert_int_equal(sc.n, XID_EVENTS_MAX);
	assert_int_equal(sc.dropped, 40 - XID_EVENTS_MAX + 1);
	sbuf_free(&b);
}

static void
test_classes(void **state)
{
	(void)state;
	assert_int_equal(xid_classify(79), XID_FATAL);
	assert_int_equal(xid_classify(48), XID_FATAL);
	assert_int_equal(xid_classify(64), XID_FATAL);
	assert_int_equal(xid_classify(95), XID_FATAL);
	assert_int_equal(xid_classify(13), XID_APP);
	assert_int_equal(xid_classify(31), XID_APP);
	assert_int_equal(xid_classify(43), XID_APP);
	assert_int_equal(xid_classify(94), XID_APP);
	assert_int_equal(xid_classify(63), XID_INFO);
	assert_int_equal(xid_classify(155), XID_UNKNOWN);
	assert_int_equal(xid_classify(99999), XID_UNKNOWN);
	assert_int_equal(xid_classify_line(154, "GPU recovery action changed "
	    "from 0x2 (Node Reboot Required) to 0x0 (None)"), XID_INFO);
	assert_int_equal(xid_classify_line(154, "recovery action changed"),
	    XID_UNKNOWN);
	assert_string_equal(xid_class_name(XID_FATAL), "fatal");
	assert_string_equal(xid_name(79), "GPU has fallen off the bus");
	assert_null(xid_name(1));
}

static void
test_seen(void **state)
{
	struct xid_seen s;
	struct xid_scan a, b;

	(void)state;
	memset(&s, 0, sizeof(s));
	scan_file("tandem-journalctl.txt", 0, &a);
	assert_int_equal(xid_seen_add(&s, &a.ev[0]), 1);
	assert_int_equal(xid_seen_add(&s, &a.ev[1]), 1);
	/* the same lines read again (since overlaps the last read) */
	scan_file("tandem-journalctl.txt", 0, &b);
	assert_int_equal(xid_seen_add(&s, &b.ev[0]), 0);
	assert_int_equal(xid_seen_add(&s, &b.ev[2]), 1);
}

static void
test_ecc(void **state)
{
	struct gpu_ecc_list l;
	char err[ERRLEN], *t;

	(void)state;
	t = slurp(DATA "ecc-gb10.csv");
	assert_int_equal(gpu_ecc_parse(t, strlen(t), &l, err, sizeof(err)), 0);
	free(t);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.g[0].pci, "000f:01:00");
	assert_true(l.g[0].uncorrected == ECC_NA);
	assert_int_equal(gpu_ecc_index(&l, "000f:01:00"), 0);
	t = slurp(DATA "ecc-3gpu.csv");
	assert_int_equal(gpu_ecc_parse(t, strlen(t), &l, err, sizeof(err)), 0);
	free(t);
	assert_int_equal(l.n, 3);
	assert_true(l.g[1].uncorrected == 2);
	assert_string_equal(l.g[1].pci, "0000:43:00");
	assert_true(l.g[2].uncorrected == ECC_NA);
	assert_int_equal(gpu_ecc_index(&l, "0000:52:00"), 2);
	assert_int_equal(gpu_ecc_index(&l, "0000:99:00"), -1);
	assert_int_equal(gpu_ecc_index(&l, ""), -1);
	assert_int_equal(gpu_ecc_parse("0, 00000000:1B:00.0\n", 20, &l, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "nvidia-smi: not index, bus id, ECC count: "
	    "\"0, 00000000:1B:00.0\"");
	assert_int_equal(gpu_ecc_parse("0, 00000000:1B:00.0, x1\n", 24, &l,
	    err, sizeof(err)), -1);
	assert_string_equal(err, "nvidia-smi: not an ECC count: \"x1\"");
	assert_int_equal(gpu_ecc_parse("No devices were found\n", 22, &l, err,
	    sizeof(err)), -1);
	assert_int_equal(gpu_ecc_parse("\n", 1, &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 0);
}

static void
test_pci(void **state)
{
	char out[XID_PCI_MAX];

	(void)state;
	assert_int_equal(xid_pci_norm("PCI:0000:02:00", 14, out, sizeof(out)),
	    0);
	assert_string_equal(out, "0000:02:00");
	assert_int_equal(xid_pci_norm("0000000F:01:00.0", 16, out,
	    sizeof(out)), 0);
	assert_string_equal(out, "000f:01:00");
	assert_int_equal(xid_pci_norm("00000000:1B:00.0", 16, out,
	    sizeof(out)), 0);
	assert_string_equal(out, "0000:1b:00");
	assert_int_equal(xid_pci_norm("0000:02", 7, out, sizeof(out)), -1);
	assert_int_equal(xid_pci_norm("0000:02:00 x", 12, out, sizeof(out)),
	    -1);
	assert_int_equal(xid_pci_norm("123456789:02:00", 15, out,
	    sizeof(out)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fallen_off_with_154),
		cmocka_unit_test(test_repeats_are_one_event),
		cmocka_unit_test(test_fallen_off_without_xid),
		cmocka_unit_test(test_gsp),
		cmocka_unit_test(test_other_shapes),
		cmocka_unit_test(test_our_command),
		cmocka_unit_test(test_refused_and_empty),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_seen),
		cmocka_unit_test(test_ecc),
		cmocka_unit_test(test_pci),
	};

	return cmocka_run_group_tests_name("xid", tests, NULL, NULL);
}
