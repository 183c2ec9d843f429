/*
 * The driver prints an Xid as
 *
 *   NVRM: Xid (PCI:0000:02:00): 79, pid=9962, name=python, GPU has fallen off the bus.
 *
 * ("(0000:03:00)" without "PCI:" in older drivers; "pid='<unknown>',
 * name=<unknown>" when no process is to blame; the rest is free text),
 * behind whatever the reader puts first: journalctl's "TIME HOST kernel: ",
 * dmesg's "[ 1843.308145] " or "[Sat Jul 11 05:52:47 2026] ", or an ISO
 * time. Newer drivers (R565 and later) add Xid 154, the recovery action
 * the driver itself decided: "GPU recovery action changed from 0x0 (None)
 * to 0x2 (Node Reboot Required)". A GPU that left the bus before any Xid
 * could be printed says so over three NVRM lines without one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "util.h"
#include "xid.h"

/*
 * NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors/
 * analyzing-xid-catalog.html, "Resolution Bucket (Immediate Action)"),
 * for the codes a GPU serving vLLM meets; tests/unit/data/nvidia-xid/
 * README.md quotes the rows. RESET_GPU and RESTART_BM, and the workflows
 * of 48 and 74 ("A GPU reset or node reboot is needed to clear this
 * error"), are fatal; RESTART_APP is what a rebuild does; IGNORE is noted.
 */
static const struct {
	int		 code;
	enum xid_class	 cls;
	const char	*name;
} table[] = {
	{ 8, XID_APP, "GPU stopped processing" },
	{ 11, XID_APP, "Invalid or corrupted push buffer stream" },
	{ 13, XID_APP, "Graphics Engine Exception" },
	{ 31, XID_APP, "GPU memory page fault" },
	/* IGNORE in the catalogue; it follows an application's own fault */
	{ 43, XID_APP, "GPU stopped processing" },
	{ 45, XID_INFO, "Preemptive cleanup, due to previous errors" },
	{ 48, XID_FATAL, "Double Bit ECC Error" },
	{ 62, XID_FATAL, "Internal micro-controller halt" },
	{ 63, XID_INFO, "GPU memory remapping event" },
	{ 64, XID_FATAL, "GPU memory remapping failure" },
	{ 74, XID_FATAL, "NVLINK Error" },
	{ 79, XID_FATAL, "GPU has fallen off the bus" },
	{ 92, XID_INFO, "High single-bit ECC error rate" },
	{ 93, XID_INFO, "Non-fatal violation of provisioned InfoROM wear "
	  "limit" },
	{ 94, XID_APP, "Contained memory error" },
	{ 95, XID_FATAL, "Uncontained memory error" },
	{ 119, XID_FATAL, "GSP RPC Timeout" },
	{ 120, XID_FATAL, "GSP Error" },
	{ 121, XID_INFO, "C2C Error" },
	{ 140, XID_FATAL, "ECC Unrecovered Error" },
	{ 154, XID_UNKNOWN, "GPU Recovery Action Changed" },
	{ 156, XID_FATAL, "Resource Retirement Event" },
	{ 157, XID_INFO, "Resource Retirement Failure" },
};

#define NTABLE (sizeof(table) / sizeof(table[0]))

enum xid_class
xid_classify(int code)
{
	size_t i;

	for (i = 0; i < NTABLE; i++)
		if (table[i].code == code)
			return table[i].cls;
	return XID_UNKNOWN;
}

const char *
xid_name(int code)
{
	size_t i;

	for (i = 0; i < NTABLE; i++)
		if (table[i].code == code)
			return table[i].name;
	return NULL;
}

/*
 * Xid 154 names the action in hex and in words, which vary by driver
 * ("0x1 (GPU Reset Required)", "0x1 (Drain and Reset)", "0x1 (PF FLR)",
 * "0x2 (Node Reboot Required)", "0x2 (OS Reboot)"): the number decides,
 * 0 being "None".
 */
enum xid_class
xid_classify_line(int code, const char *line)
{
	const char *p;
	char *end;
	unsigned long v;

	if (code != 154)
		return xid_classify(code);
	if ((p = strstr(line, " to 0x")) == NULL)
		return XID_UNKNOWN;
	v = strtoul(p + 4, &end, 16);
	if (end == p + 4)
		return XID_UNKNOWN;
	return v == 0 ? XID_INFO : XID_FATAL;
}

const char *
xid_class_name(enum xid_class c)
{
	switch (c) {
	case XID_FATAL:
		return "fatal";
	case XID_APP:
		return "application";
	case XID_INFO:
		return "informational";
	case XID_UNKNOWN:
		return "unknown";
	}
	return "?";
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static long
days_from_civil(long y, long m, long d)
{
	long era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
digits(const char *p, const char *end, int n, long *out)
{
	long v = 0;
	int i;

	if (end - p < n)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * "2026-07-11T05:51:26+0000" (journalctl -o short-iso),
 * "2026-07-11T05:51:26,123456+00:00" (dmesg --time-format iso), with Z or
 * no zone taken as UTC. Returns the position after it, or NULL.
 */
static const char *
iso_time(const char *p, const char *end, double *t)
{
	long y, mo, d, h, mi, s, zh = 0, zm = 0;
	int sign = 0;

	if (digits(p, end, 4, &y) || end - p < 19 || p[4] != '-' ||
	    digits(p + 5, end, 2, &mo) || p[7] != '-' ||
	    digits(p + 8, end, 2, &d) || (p[10] != 'T' && p[10] != ' ') ||
	    digits(p + 11, end, 2, &h) || p[13] != ':' ||
	    digits(p + 14, end, 2, &mi) || p[16] != ':' ||
	    digits(p + 17, end, 2, &s))
		return NULL;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    s > 60)
		return NULL;
	p += 19;
	if (p < end && (*p == ',' || *p == '.'))
		for (p++; p < end && isdigit((unsigned char)*p); p++)
			;
	if (p < end && *p == 'Z')
		p++;
	else if (p < end && (*p == '+' || *p == '-')) {
		sign = *p == '-' ? -1 : 1;
		if (digits(p + 1, end, 2, &zh))
			return NULL;
		p += 3;
		if (p < end && *p == ':')
			p++;
		if (digits(p, end, 2, &zm))
			return NULL;
		p += 2;
	}
	*t = (double)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
	    s - sign * (zh * 3600 + zm * 60);
	return p;
}

/* The PCI address at p: "0000:02:00", "PCI:0000:02:00", "0000:02:00.0". */
int
xid_pci_norm(const char *in, size_t inlen, char *out, size_t outlen)
{
	const char *p = in, *end = in + inlen;
	unsigned long part[3];
	int i;

	if (inlen >= 4 && strncmp(p, "PCI:", 4) == 0)
		p += 4;
	for (i = 0; i < 3; i++) {
		const char *s = p;

		part[i] = 0;
		while (p < end && isxdigit((unsigned char)*p) && p - s < 8) {
			part[i] = part[i] * 16 + (unsigned long)(isdigit(
			    (unsigned char)*p) ? *p - '0' :
			    tolower((unsigned char)*p) - 'a' + 10);
			p++;
		}
		if (p == s)
			return -1;
		if (i < 2) {
			if (p >= end || *p != ':')
				return -1;
			p++;
		}
	}
	/* a function number may follow: ".0" */
	if (p < end && *p == '.')
		for (p++; p < end && isxdigit((unsigned char)*p); p++)
			;
	if (p != end || part[0] > 0xffff || part[1] > 0xff || part[2] > 0x1f)
		return -1;
	snprintf(out, outlen, "%04lx:%02lx:%02lx", part[0], part[1], part[2]);
	return 0;
}

static unsigned long
fnv1a(const char *p, size_t n)
{
	unsigned long h = 2166136261UL;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 16777619UL;
	}
	return h;
}

/* Copies the span as UTF-8, trimmed, into a fixed buffer. */
static void
words(char *out, size_t outlen, const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	utf8_copyn(out, outlen, p, (size_t)(end - p));
}

static void
add_event(struct xid_scan *sc, int code, const char *pci, double t,
    const char *raw, const char *rawend, const char *from)
{
	struct xid_event *e;
	size_t i;

	for (i = 0; i < sc->n; i++)
		if (sc->ev[i].code == code && strcmp(sc->ev[i].pci, pci) == 0)
			return;		/* the driver repeats itself */
	if (sc->n == XID_EVENTS_MAX) {
		sc->dropped++;
		return;
	}
	e = &sc->ev[sc->n++];
	memset(e, 0, sizeof(*e));
	e->code = code;
	snprintf(e->pci, sizeof(e->pci), "%s", pci);
	e->t = t;
	e->hash = fnv1a(raw, (size_t)(rawend - raw));
	words(e->line, sizeof(e->line), from, rawend);
	e->cls = xid_classify_line(code, e->line);
}

/* The PCI address that follows "GPU " in a line, normalised, or "". */
static void
gpu_pci_after(const char *p, const char *end, const char *marker,
    char *out, size_t outlen)
{
	const char *s = span_str(p, end, marker), *e;

	out[0] = '\0';
	if (s == NULL)
		return;
	s += strlen(marker);
	for (e = s; e < end && (isxdigit((unsigned char)*e) || *e == ':' ||
	    *e == '.'); e++)
		;
	/* "0000:01:00.0:" ends in the colon of the sentence */
	if (e > s && e[-1] == ':')
		e--;
	if (xid_pci_norm(s, (size_t)(e - s), out, outlen) != 0)
		out[0] = '\0';
}

static int
refusal(const char *p, const char *end)
{
	static const char *const texts[] = {
		/* util-linux dmesg without CAP_SYSLOG (dmesg_restrict=1) */
		"read kernel buffer failed",
		/* systemd journalctl without the adm or systemd-journal group */
		"not seeing messages from other users and the system",
		"No journal files were opened due to insufficient permissions",
		"No journal files were found",
		NULL,
	};
	size_t i;

	for (i = 0; texts[i]; i++)
		if (span_str(p, end, texts[i]))
			return 1;
	return 0;
}

static void
scan_line(struct xid_scan *sc, const char *raw, const char *end,
    double since, char *lastpci, size_t lastlen)
{
	const char *p = raw, *nvrm, *x, *q;
	double t = 0;
	char pci[XID_PCI_MAX];
	long code;

	if (end - p >= 7 && strncmp(p, "tandem:", 7) == 0) {
		if (span_str(p, end, "journalctl"))
			sc->source = KLOG_JOURNALCTL;
		else if (span_str(p, end, "dmesg"))
			sc->source = KLOG_DMESG;
		return;
	}
	if (refusal(p, end)) {
		if (!sc->unreadable)
			words(sc->why, sizeof(sc->why), p, end);
		sc->unreadable = 1;
		return;
	}
	if ((q = iso_time(p, end, &t)) == NULL)
		t = 0;
	if ((nvrm = span_str(p, end, "NVRM: ")) == NULL)
		return;
	if (t > 0 && since > 0 && t < since)
		return;
	if ((x = span_str(nvrm, end, "Xid (")) != NULL) {
		const char *dev = x + 5, *close = span_str(dev, end, "): ");

		if (close == NULL)
			return;
		if (xid_pci_norm(dev, (size_t)(close - dev), pci,
		    sizeof(pci)) != 0)
			pci[0] = '\0';
		/* bounded by the line: the text need not end in a NUL */
		for (q = close + 3, code = 0; q < end && isdigit((unsigned
		    char)*q) && code <= 100000; q++)
			code = code * 10 + (*q - '0');
		if (q == close + 3 || code <= 0 || code > 100000)
			return;
		add_event(sc, (int)code, pci, t, raw, end, nvrm);
		return;
	}
	/* "NVRM: The NVIDIA GPU 0000:b3:00.0" begins the three-line form */
	gpu_pci_after(nvrm, end, "NVIDIA GPU ", pci, sizeof(pci));
	if (pci[0])
		snprintf(lastpci, lastlen, "%s", pci);
	if (span_str(nvrm, end, "fallen off the bus")) {
		gpu_pci_after(nvrm, end, "GPU ", pci, sizeof(pci));
		add_event(sc, 79, pci[0] ? pci : lastpci, t, raw, end, nvrm);
	}
}

void
xid_scan(const char *text, size_t len, double since, struct xid_scan *sc)
{
	const char *p = text, *end = text + len, *nl, *e;
	char lastpci[XID_PCI_MAX] = "";

	memset(sc, 0, sizeof(*sc));
	if (text == NULL)
		len = 0, p = end = "";
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		e = nl ? nl : end;
		if (e > p && e[-1] == '\r')
			e--;
		scan_line(sc, p, e, since, lastpci, sizeof(lastpci));
		p = nl ? nl + 1 : end;
	}
	if (sc->source == KLOG_UNKNOWN && !sc->unreadable) {
		/* the command's last line never came: nothing was read */
		sc->unreadable = 1;
		snprintf(sc->why, sizeof(sc->why), "%s", len ?
		    "the kernel log command did not finish" :
		    "no answer from the kernel log command");
	}
}

const struct xid_event *
xid_worst(const struct xid_scan *sc)
{
	static const int rank[] = { [XID_FATAL] = 0, [XID_UNKNOWN] = 1,
	    [XID_APP] = 2, [XID_INFO] = 3 };
	const struct xid_event *w = NULL;
	size_t i;

	for (i = 0; i < sc->n; i++)
		if (w == NULL || rank[sc->ev[i].cls] < rank[w->cls])
			w = &sc->ev[i];
	return w;
}

int
xid_seen_add(struct xid_seen *s, const struct xid_event *e)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->h[i] == e->hash)
			return 0;
	s->h[s->next] = e->hash;
	s->next = (s->next + 1) % XID_SEEN_MAX;
	if (s->n < XID_SEEN_MAX)
		s->n++;
	return 1;
}

/*
 * "0, 00000000:01:00.0, 0": index, pci.bus_id, the count, or [N/A] where
 * the GPU has no ECC (GB10's unified memory) and [Not Supported] where
 * the driver cannot say.
 */
int
gpu_ecc_parse(const char *text, size_t len, struct gpu_ecc_list *l,
    char *err, size_t errlen)
{
	const char *p = text, *end = text + len, *nl, *e;

	memset(l, 0, sizeof(*l));
	while (p < end) {
		char line[256], whole[120], *f[3], *s, *stop;
		size_t n;
		int i;

		nl = memchr(p, '\n', (size_t)(end - p));
		e = nl ? nl : end;
		n = (size_t)(e - p);
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		p = nl ? nl + 1 : end;
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (strspn(line, " \t") == n)
			continue;
		utf8_copyn(whole, sizeof(whole), line, n);
		s = line;
		for (i = 0; i < 3; i++) {
			f[i] = s;
			if ((s = strchr(s, ',')) != NULL)
				*s++ = '\0';
			else if (i < 2)
				break;
		}
		if (i < 3 || s != NULL) {
			snprintf(err, errlen, "nvidia-smi: not index, bus id, "
			    "ECC count: \"%s\"", whole);
			return -1;
		}
		for (i = 0; i < 3; i++) {
			char *t = f[i] + strlen(f[i]);

			f[i] += strspn(f[i], " \t");
			while (t > f[i] && (t[-1] == ' ' || t[-1] == '\t'))
				*--t = '\0';
		}
		if (l->n == GPU_ECC_MAX)
			break;
		l->g[l->n].index = (int)strtol(f[0], &stop, 10);
		if (*stop || stop == f[0] || xid_pci_norm(f[1], strlen(f[1]),
		    l->g[l->n].pci, sizeof(l->g[l->n].pci)) != 0) {
			char shown[120];

			utf8_copyn(shown, sizeof(shown), f[0], strlen(f[0]));
			snprintf(err, errlen, "nvidia-smi: not a GPU index and "
			    "bus id: \"%s\"", shown);
			return -1;
		}
		if (f[2][0] == '[')	/* [N/A], [Not Supported] */
			l->g[l->n].uncorrected = ECC_NA;
		else {
			l->g[l->n].uncorrected = strtoll(f[2], &stop, 10);
			if (*stop || stop == f[2] ||
			    l->g[l->n].uncorrected < 0) {
				char shown[120];

				utf8_copyn(shown, sizeof(shown), f[2],
				    strlen(f[2]));
				snprintf(err, errlen, "nvidia-smi: not an ECC "
				    "count: \"%s\"", shown);
				return -1;
			}
		}
		l->n++;
	}
	return 0;
}

int
gpu_ecc_index(const struct gpu_ecc_list *l, const char *pci)
{
	size_t i;

	if (pci == NULL || pci[0] == '\0')
		return -1;
	for (i = 0; i < l->n; i++)
		if (strcmp(l->g[i].pci, pci) == 0)
			return l->g[i].index;
	return -1;
}

void
xid_describe(const struct xid_event *e, const char *node, int gpu,
    char *buf, size_t len)
{
	char where[64];
	const char *name = xid_name(e->code);

	if (gpu >= 0 && e->pci[0])
		snprintf(where, sizeof(where), "GPU %d (PCI %s)", gpu, e->pci);
	else if (e->pci[0])
		snprintf(where, sizeof(where), "GPU at PCI %s", e->pci);
	else
		snprintf(where, sizeof(where), "a GPU");
	snprintf(buf, len, "%s %s: Xid %d%s%s: %s", node, where, e->code,
	    name ? ", " : "", name ? name : "", e->line);
}
