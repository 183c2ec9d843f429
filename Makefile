# tandem: keeps a multi-node vLLM cluster serving.
# make deps | all | check | check-repeat | demo | bench | install | uninstall | clean
# make check SAN=1 builds with AddressSanitizer + UndefinedBehaviorSanitizer.

PREFIX	?= /usr/local
DESTDIR	?=
SAN	?= 0

PKGS	 = libuv libssh2 jansson libmicrohttpd libsystemd libcurl
DEBS	 = build-essential pkg-config libuv1-dev libssh2-1-dev libjansson-dev \
	   libmicrohttpd-dev libsystemd-dev libcurl4-openssl-dev libcmocka-dev \
	   openssh-server openssh-client iproute2 curl python3 procps \
	   util-linux psmisc systemd valgrind man-db \
	   docker.io podman runc debootstrap xxd chromium
BENCH_DEBS = wrk nginx-light monit
SUDO	:= $(if $(filter 0,$(shell id -u)),,sudo)

CFLAGS	?= -O2 -g
WARN	 = -std=c17 -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes \
	   -Wstrict-prototypes -Wpointer-arith -Wno-format-truncation
CPPFLAGS += -D_GNU_SOURCE -Ilib
ifeq ($(SAN),1)
B	 = build-san
CFLAGS	+= -fsanitize=address,undefined -fno-omit-frame-pointer \
	   -fno-sanitize-recover=undefined
LDFLAGS	+= -fsanitize=address,undefined
else
B	 = build
endif
PKGCFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKGLIBS	  = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

LIBSRC	 = $(wildcard lib/*.c)
LIBOBJ	 = $(LIBSRC:%.c=$(B)/%.o)
DSRC	 = $(filter-out daemon/tandemctl.c daemon/bench.c, $(wildcard daemon/*.c))
DOBJ	 = $(DSRC:%.c=$(B)/%.o)
# The status page (GET /) is built into the binary: daemon/page/ as C arrays.
PAGESRC	 = daemon/page/status.html daemon/page/status.css daemon/page/status.js
DOBJ	+= $(B)/gen/page.o
CTLOBJ	 = $(B)/daemon/tandemctl.o $(B)/daemon/bench.o
UNITSRC	 = $(wildcard tests/unit/test_*.c)
UNITBIN	 = $(UNITSRC:tests/unit/%.c=$(B)/tests/%)

all: $(B)/tandemd $(B)/tandemctl $(UNITBIN)

$(B)/%.o: %.c lib/*.h daemon/*.h
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $(PKGCFLAGS) -c $< -o $@

$(B)/gen/page.c: $(PAGESRC)
	@mkdir -p $(dir $@)
	(cd daemon/page && for f in $(notdir $(PAGESRC)); do xxd -i $$f; done) \
	    >$@.tmp && mv $@.tmp $@

$(B)/gen/page.o: $(B)/gen/page.c
	$(CC) $(WARN) $(CFLAGS) -c $< -o $@

$(B)/libtandem.a: $(LIBOBJ)
	$(AR) rcs $@ $^

$(B)/tandemd: $(DOBJ) $(B)/libtandem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKGLIBS) -lm

$(B)/tandemctl: $(CTLOBJ) $(filter-out $(B)/daemon/tandemd.o, $(DOBJ)) $(B)/libtandem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKGLIBS) -lm

$(B)/tests/%: tests/unit/%.c $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(CPPFLAGS) \
	    $(PKGCFLAGS) -o $@ $< $(B)/libtandem.a $(PKGLIBS) -lcmocka -lm

# Installed under a policy-rc.d that starts no service: the test bed runs
# its own sshd and a dockerd per node, never the host's.
deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p \
	    2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "make deps: installing" $$missing; \
	    rc=/usr/sbin/policy-rc.d; own=; \
	    [ -e $$rc ] || { own=1; printf '#!/bin/sh\nexit 101\n' | \
	        $(SUDO) tee $$rc >/dev/null; $(SUDO) chmod 755 $$rc; }; \
	    $(SUDO) apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	        --no-install-recommends $$missing >/dev/null; st=$$?; \
	    [ -z "$$own" ] || $(SUDO) rm -f $$rc; exit $$st; \
	fi

check: deps
	$(MAKE) all
	B=$(B) tests/run

demo: deps
	$(MAKE) all
	B=$(B) tests/demo

bench: deps
	@$(MAKE) -s deps DEBS="$(BENCH_DEBS)"
	$(MAKE) all
	B=$(B) tests/bench

# make check-repeat N=20 TESTS="21 26": the flake hunter; runs the chosen
# integration tests (name prefixes) N times each and counts the failures.
N	?= 10
TESTS	?= 21 26
check-repeat: deps
	$(MAKE) all
	B=$(B) tests/repeat $(N) $(TESTS)

# make soak: the long soak, 200 random faults against the bed (~25 min);
# its result goes into docs/benchmarks.md and bench/soak.json.
soak: deps
	$(MAKE) all
	B=$(B) SOAK_FAULTS=$${SOAK_FAULTS:-200} SOAK_WRITE=1 tests/integration/32-daemon-soak

install: $(B)/tandemd $(B)/tandemctl
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
	    $(DESTDIR)/etc/tandem $(DESTDIR)/lib/systemd/system \
	    $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)$(PREFIX)/share/doc/tandem
	install -m 755 $(B)/tandemd $(DESTDIR)$(PREFIX)/sbin/tandemd
	install -m 755 $(B)/tandemctl $(DESTDIR)$(PREFIX)/bin/tandemctl
	sed 's|@SBINDIR@|$(PREFIX)/sbin|g' systemd/tandemd.service > \
	    $(DESTDIR)/lib/systemd/system/tandemd.service
	install -m 644 etc/tandem.json etc/tandem-dp.json \
	    $(DESTDIR)$(PREFIX)/share/doc/tandem/
	[ -e $(DESTDIR)/etc/tandem/tandem.json ] || \
	    install -m 640 etc/tandem.json $(DESTDIR)/etc/tandem/tandem.json
	install -m 644 docs/man/tandemctl.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 docs/man/tandem.json.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 docs/man/tandemd.8 $(DESTDIR)$(PREFIX)/share/man/man8/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/tandemd $(DESTDIR)$(PREFIX)/bin/tandemctl \
	    $(DESTDIR)/lib/systemd/system/tandemd.service \
	    $(DESTDIR)$(PREFIX)/share/man/man1/tandemctl.1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5/tandem.json.5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8/tandemd.8
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/tandem

clean:
	rm -rf build build-san build-fuzz

.PHONY: all deps check check-repeat demo bench soak install uninstall clean

# make fuzz: libFuzzer (clang) on every parser of outside input, each for
# FUZZ_SECONDS; crashes land in tests/fuzz/crashes/ and become regression
# inputs in the corpus.
FUZZ_SECONDS ?= 60
FUZZERS	 = config raystatus diagnose dockerout http utf8
FUZZFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ilib \
	    -Idaemon $(PKGCFLAGS)
# The HTTP harness runs the daemon's own server code, so it links the daemon.
FUZZSRC_http = $(filter-out daemon/tandemd.c, $(DSRC)) $(B)/gen/page.c

fuzz: $(B)/gen/page.c
	@$(MAKE) -s deps DEBS="clang libclang-rt-14-dev"
	@mkdir -p build-fuzz tests/fuzz/crashes
	@set -e; for f in $(FUZZERS); do \
	    case $$f in http) extra="$(FUZZSRC_http)";; *) extra=;; esac; \
	    clang $(FUZZFLAGS) -o build-fuzz/fuzz_$$f tests/fuzz/fuzz_$$f.c \
	        $$extra $(LIBSRC) $(PKGLIBS) -lm; \
	    echo "fuzz_$$f: $(FUZZ_SECONDS) s"; \
	    build-fuzz/fuzz_$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	        -artifact_prefix=tests/fuzz/crashes/$$f- \
	        -print_final_stats=1 tests/fuzz/corpus/$$f >build-fuzz/$$f.log 2>&1 \
	        || { grep -a -A30 -E '^==.*ERROR' build-fuzz/$$f.log; exit 1; }; \
	    grep -a -E '^stat::(number_of_executed_units|peak_rss)' build-fuzz/$$f.log; \
	done; rm -rf /dev/shm/fuzz-http.*

# The real tandemctl check output shown in docs/troubleshooting.md.
docs-check: all
	B=$(B) tests/gen-check-doc

.PHONY: fuzz docs-check
