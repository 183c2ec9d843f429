/*
 * The commands behind the hardware checks: the driver's Xid lines from
 * the node's kernel log, and each GPU's uncorrectable ECC count
 * (lib/parse/xid.c reads both answers). Rendered like plan.c's, every value
 * quoted.
 */
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"
#include "quote.h"

/*
 * The kernel's NVRM lines since SINCE (Unix seconds; 0: the whole log),
 * at most 400 of them and 1000 bytes each, then "tandem: journalctl" or
 * "tandem: dmesg" to say which tool read them (and that the command got
 * to its end). journalctl -k reads the journal, which a non-root ssh.user
 * may do in the adm or systemd-journal group; dmesg needs CAP_SYSLOG
 * where kernel.dmesg_restrict is 1 (Debian's and Ubuntu's default), so
 * it is only the fallback, for nodes without systemd's journal. Their
 * refusals are kept (stderr, and no -q, which would hide journalctl's
 * notice) so that a log tandem may not read is said to be unread, never
 * taken for a clean one. dmesg cannot start at a time: lib/parse/xid.c drops
 * its older lines by their ISO time.
 */
char *
cmd_kernel_xid(double since)
{
	struct strv v;
	struct sbuf b;
	char at[32];

	snprintf(at, sizeof(at), "@%lld", since > 0 ? (long long)since : 0LL);
	sbuf_init(&b);
	sbuf_add(&b, "if command -v journalctl >/dev/null 2>&1; then ");
	strv_init(&v);
	strv_add(&v, "journalctl");
	strv_add(&v, "-k");
	strv_add(&v, "--no-pager");
	strv_add(&v, "-o");
	strv_add(&v, "short-iso");
	if (since > 0) {
		strv_add(&v, "--since");
		strv_add(&v, at);
	}
	shell_join(&b, v.v);
	strv_free(&v);
	sbuf_add(&b, " 2>&1 | grep -E 'NVRM|journal|Hint:' | tail -n 400 | "
	    "cut -c 1-1000; echo 'tandem: journalctl'; else "
	    "dmesg --time-format iso 2>&1 | grep -E 'NVRM|^dmesg:' | "
	    "tail -n 400 | cut -c 1-1000; echo 'tandem: dmesg'; fi");
	return sbuf_take(&b);
}

/*
 * Index, bus id (to name the GPU of an Xid line, which gives only the
 * PCI address) and the uncorrectable ECC errors since the driver loaded.
 */
char *
cmd_gpu_ecc(void)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "nvidia-smi");
	strv_add(&v, "--query-gpu=index,pci.bus_id,"
	    "ecc.errors.uncorrected.volatile.total");
	strv_add(&v, "--format=csv,noheader");
	return shell_command_take(&v);
}

char *
cmd_boot_id(void)
{
	struct strv v;

	strv_init(&v);
	strv_add(&v, "cat");
	strv_add(&v, "/proc/sys/kernel/random/boot_id");
	return shell_command_take(&v);
}
