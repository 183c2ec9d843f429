# tandem: keeps a multi-node vLLM cluster serving.
# make all (the default: tandemd and tandemctl, nothing else) | install |
#      uninstall | deb | clean
# make deps | units | test-units | check | lint | check-repeat | demo | bench |
#      matrix | soak | soak-false-alarm | soak-saturated | fuzz | docs-check: the
#      developers' targets
# make check SAN=1 builds with AddressSanitizer + UndefinedBehaviorSanitizer.

PREFIX	?= /usr/local
DESTDIR	?=
# systemd reads units under /usr/local/lib and /usr/lib alike; the .deb
# keeps Debian 12's /lib/systemd/system (debian/rules).
UNITDIR	?= $(PREFIX)/lib/systemd/system
MONDIR	 = $(PREFIX)/share/tandem/monitoring
SAN	?= 0

PKGS	 = libuv libssh2 jansson libmicrohttpd libsystemd libcurl
# What make deps installs for the tests and the bed: never needed by make,
# make install or make deb (whose build needs are debian/control's
# Build-Depends: make deb-deps). docker.io would replace a head node's
# docker-ce.
DEBS	 = build-essential pkg-config libuv1-dev libssh2-1-dev libjansson-dev \
	   libmicrohttpd-dev libsystemd-dev libcurl4-openssl-dev libcmocka-dev \
	   openssh-server openssh-client iproute2 iputils-ping curl python3 procps \
	   util-linux psmisc systemd valgrind man-db \
	   docker.io podman runc debootstrap chromium \
	   debhelper dpkg-dev fakeroot lintian stress-ng prometheus \
	   clang libclang-rt-14-dev
BENCH_DEBS = wrk nginx-light monit

CFLAGS	?= -O2 -g
WARN	 = -std=c17 -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes \
	   -Wstrict-prototypes -Wpointer-arith -Wcast-qual -Wmissing-declarations
# Every folder of lib/ and daemon/ (two deep: daemon/cluster/act/) is on
# the include path: a header is named by its file name, and make lint
# checks no two folders include each other round in a circle and no
# folder includes one above it.
DIRS	 = lib $(sort $(dir $(wildcard lib/*/*.h lib/*/*/*.h))) daemon \
	   $(sort $(dir $(wildcard daemon/*/*.h daemon/*/*/*.h)))
CPPFLAGS += -D_GNU_SOURCE $(addprefix -I,$(patsubst %/,%,$(DIRS)))
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

LIBSRC	 = $(wildcard lib/*.c lib/*/*.c lib/*/*/*.c)
LIBOBJ	 = $(LIBSRC:%.c=$(B)/%.o)
DSRC	 = $(filter-out daemon/ctl/%,$(wildcard daemon/*.c daemon/*/*.c \
	   daemon/*/*/*.c))
DOBJ	 = $(DSRC:%.c=$(B)/%.o)
# The status page (GET /) is built into the binary: daemon/api/page/ as C arrays.
PAGESRC	 = daemon/api/page/status.html daemon/api/page/status.css \
	   daemon/api/page/status.js
DOBJ	+= $(B)/gen/page.o
# tandemctl takes from the daemon only the SSH client (check, which runs
# lib/preflight/preflight_steps.c), the HTTP client (bench) and the token file reader (the
# rules tandemd applies), never what runs the cluster.
CTLSRC	 = $(wildcard daemon/ctl/*.c)
CTLOBJ	 = $(CTLSRC:%.c=$(B)/%.o) \
	   $(addprefix $(B)/daemon/, sys/log.o sys/conffile.o ssh/ssh_session.o \
	   sys/clock.o ssh/ssh_job.o ssh/ssh_alive.o ssh/ssh_hostkey.o \
	   ssh/ssh_libssh2.o \
	   http/http.o sys/tokenfile.o sys/portholder.o) $(B)/gen/examples.o
UNITSRC	 = $(wildcard tests/unit/test_*.c)
UNITBIN	 = $(UNITSRC:tests/unit/%.c=$(B)/tests/%)
# The actions' unit tests run daemon/cluster/act/'s actions and the
# runtime's services beside them against a fake executor and funnel
# (tests/unit/act_harness.c); the SSH client is linked for one count
# workload.c's warnings ask of a session (none in a test).
ACTOBJ	 = $(patsubst %.c,$(B)/%.o,$(wildcard daemon/cluster/act/*.c) \
	   $(addprefix daemon/cluster/, action_run.c runtime_env.c keys.c) \
	   $(addprefix daemon/cluster/svc/, remedy.c tracing.c workload.c \
	   hwcheck.c evidence.c history.c state.c stop.c)) \
	   $(B)/daemon/sys/bundle_store.o $(B)/daemon/sys/tokenfile.o \
	   $(addprefix $(B)/daemon/ssh/, ssh_session.o ssh_job.o ssh_alive.o \
	   ssh_libssh2.o ssh_hostkey.o)

# The programs only: the unit tests (cmocka) build under make units,
# test-units and check.
all: $(B)/tandemd $(B)/tandemctl

units: $(UNITBIN) $(B)/tests/send_partial

test-units: units
	UNIT_ONLY=1 B=$(B) tests/run

HDRS	 = $(wildcard lib/*.h lib/*/*.h lib/*/*/*.h daemon/*.h daemon/*/*.h \
	   daemon/*/*/*.h)

$(B)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $(PKGCFLAGS) -c $< -o $@

# As xxd -i writes it, with od and sed (coreutils, sed: on every system),
# so a build needs nothing beyond build-essential and the -dev packages.
$(B)/gen/page.c: $(PAGESRC)
	@mkdir -p $(dir $@)
	for f in $(PAGESRC); do \
	    n=$$(basename $$f | tr . _); \
	    echo "unsigned char $$n[] = {"; \
	    od -An -v -tx1 $$f | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1, /g'; \
	    echo "};"; \
	    echo "unsigned int $${n}_len = $$(wc -c <$$f);"; \
	done >$@.tmp && mv $@.tmp $@

$(B)/gen/page.o: $(B)/gen/page.c
	$(CC) $(WARN) $(CFLAGS) -c $< -o $@

# The shipped example configs, byte for byte, in tandemctl: init replaces
# a file that is one of them without --force (wherever the docs went).
EXAMPLES = etc/tandem.json etc/tandem-dp.json
$(B)/gen/examples.c: $(EXAMPLES)
	@mkdir -p $(dir $@)
	for f in $(EXAMPLES); do \
	    n=$$(basename $$f | tr .- __); \
	    echo "unsigned char $$n[] = {"; \
	    od -An -v -tx1 $$f | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1, /g'; \
	    echo "};"; \
	    echo "unsigned int $${n}_len = $$(wc -c <$$f);"; \
	done >$@.tmp && mv $@.tmp $@

$(B)/gen/examples.o: $(B)/gen/examples.c
	$(CC) $(WARN) $(CFLAGS) -c $< -o $@

# Made anew: ar would keep the object of a file renamed or removed since.
$(B)/libtandem.a: $(LIBOBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(B)/tandemd: $(DOBJ) $(B)/libtandem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKGLIBS) -lm

$(B)/tandemctl: $(CTLOBJ) $(B)/libtandem.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKGLIBS) -lm

# The tests read the example configs as the daemon does (conffile.o).
$(B)/tests/%: tests/unit/%.c $(B)/daemon/sys/conffile.o $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(CPPFLAGS) \
	    $(PKGCFLAGS) -o $@ $^ $(PKGLIBS) -lcmocka -lm

# tests/ssh/: tandem's SSH client against a real sshd (37-ssh-send-latch).
SSHDRV	 = $(addprefix $(B)/daemon/, ssh/ssh_session.o ssh/ssh_job.o ssh/ssh_alive.o \
	   ssh/ssh_libssh2.o \
	   ssh/ssh_hostkey.o sys/log.o sys/clock.o)
$(B)/tests/send_partial: tests/ssh/send_partial.c $(SSHDRV) $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $(PKGCFLAGS) $(LDFLAGS) -o $@ $^ \
	    $(PKGLIBS) -lm

# The executor (daemon/cluster/act/op.c) alone on a fake transport: it
# needs only the log and the clock, nothing of the runtime.
$(B)/tests/test_op: tests/unit/test_op.c $(B)/daemon/cluster/act/op.o \
	    $(B)/daemon/sys/log.o $(B)/daemon/sys/clock.o $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(CPPFLAGS) \
	    $(PKGCFLAGS) -o $@ $^ $(PKGLIBS) -lcmocka -lm

$(B)/tests/act_%.o: tests/unit/act_%.c tests/unit/act_harness.h $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(CPPFLAGS) $(PKGCFLAGS) -c $< -o $@

# The change's rollback (change.c) against the same fake executor; its
# runtime side (what change_init is handed) is the test's, and so are the
# config files' check, the hooks and sd_notify (conffile_check_files,
# hooks_on_change, notify_status).
$(B)/tests/test_act_change: tests/unit/test_act_change.c \
	    $(B)/tests/act_harness.o $(B)/tests/act_runtime.o $(ACTOBJ) \
	    $(B)/daemon/cluster/change.o \
	    $(B)/daemon/cluster/change_view.o \
	    $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(CPPFLAGS) \
	    -Itests/unit $(PKGCFLAGS) -o $@ $^ $(PKGLIBS) -lcmocka -lm

$(B)/tests/test_act_%: tests/unit/test_act_%.c $(B)/tests/act_harness.o \
	    $(B)/tests/act_runtime.o $(ACTOBJ) $(B)/libtandem.a
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -Wno-missing-prototypes $(CFLAGS) $(CPPFLAGS) \
	    -Itests/unit $(PKGCFLAGS) -o $@ $^ $(PKGLIBS) -lcmocka -lm

# Installs the missing packages; tests/deps says how.
deps:
	@tests/deps $(DEBS)

check: deps
	$(MAKE) all units
	$(MAKE) lint
	B=$(B) tests/run

# No two folders of lib/ and daemon/ include each other round in a circle,
# none includes a folder above it (LIB_LAYERS, DAEMON_LAYERS), and lib/
# includes nothing of daemon/ (tests/lint/includes); a step (act_*.c) sees
# only daemon/cluster/act/'s headers and lib/config/, a probe lib/ too
# (tests/lint/actions).
lint:
	tests/lint/includes
	tests/lint/actions

demo: deps
	$(MAKE) all
	B=$(B) tests/demo

bench: deps
	@tests/deps $(BENCH_DEBS)
	$(MAKE) all
	B=$(B) tests/bench

# make check-repeat N=20 TESTS="21 24": the flake hunter; runs the chosen
# integration tests (name prefixes) N times each and counts the failures
# (SIM_TAG=x: on the tagged bed x, see tests/repeat).
N	?= 10
TESTS	?= 21 26
check-repeat: deps
	$(MAKE) all
	B=$(B) tests/repeat $(N) $(TESTS)

# make soak: the long soak, 200 random faults against the bed (~25 min);
# its result goes into docs/benchmarks.md and bench/soak.json.
# Every cell of the fault matrix (make check runs 28 of its 84): about 40
# minutes on the 2-core test machine.
matrix: deps
	$(MAKE) all
	B=$(B) MATRIX_FULL=1 tests/integration/60-faults-matrix

soak: deps
	$(MAKE) all
	B=$(B) SOAK_FAULTS=$${SOAK_FAULTS:-200} SOAK_WRITE=1 tests/integration/61-faults-soak

# make soak-false-alarm: 10 minutes of both cores saturated (stress-ng) and
# 200 ms added each way between tandemd and the nodes, with the default
# timings: zero rebuilds expected (make check runs 30 s of it). It loads the
# whole machine: run it alone.
FALSE_ALARM_S ?= 600
soak-false-alarm: deps
	$(MAKE) all
	B=$(B) FALSE_ALARM_S=$(FALSE_ALARM_S) tests/integration/62-faults-false-alarm

# make soak-saturated: 10 minutes of a saturated vLLM that still makes
# tokens (simctl vllm-saturate) under tandemctl bench, with the default
# timings: zero rebuilds expected (make check runs 60 s of it).
SATURATED_S ?= 600
soak-saturated: deps
	$(MAKE) all
	B=$(B) SATURATED_S=$(SATURATED_S) tests/integration/84-prod-saturated-no-stall

install: $(B)/tandemd $(B)/tandemctl
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
	    $(DESTDIR)/etc/tandem $(DESTDIR)$(UNITDIR) $(DESTDIR)/etc/default \
	    $(DESTDIR)$(MONDIR)/prometheus $(DESTDIR)$(MONDIR)/grafana \
	    $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)$(PREFIX)/share/doc/tandem \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -d -m 750 $(DESTDIR)/etc/tandem
	install -m 755 $(B)/tandemd $(DESTDIR)$(PREFIX)/sbin/tandemd
	install -m 755 $(B)/tandemctl $(DESTDIR)$(PREFIX)/bin/tandemctl
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@BINDIR@|$(PREFIX)/bin|g' \
	    systemd/tandemd.service > \
	    $(DESTDIR)$(UNITDIR)/tandemd.service
	install -m 644 etc/tandem.json etc/tandem-dp.json \
	    $(DESTDIR)$(PREFIX)/share/doc/tandem/
	[ -e $(DESTDIR)/etc/tandem/tandem.json ] || \
	    install -m 640 etc/tandem.json $(DESTDIR)/etc/tandem/tandem.json
	[ -e $(DESTDIR)/etc/default/tandemd ] || \
	    install -m 644 etc/tandemd.default $(DESTDIR)/etc/default/tandemd
	install -m 644 contrib/prometheus/*.yml $(DESTDIR)$(MONDIR)/prometheus/
	install -m 644 contrib/grafana/*.json $(DESTDIR)$(MONDIR)/grafana/
	install -m 644 docs/man/tandemctl.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 docs/man/tandem.json.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 docs/man/tandemd.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 644 etc/tandem.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandemctl
	install -m 644 etc/tandem.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandemd

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/tandemd $(DESTDIR)$(PREFIX)/bin/tandemctl \
	    $(DESTDIR)$(UNITDIR)/tandemd.service \
	    $(DESTDIR)$(PREFIX)/share/man/man1/tandemctl.1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5/tandem.json.5 \
	    $(DESTDIR)$(PREFIX)/share/man/man8/tandemd.8 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandemctl \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/tandemd
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/tandem $(DESTDIR)$(PREFIX)/share/tandem

clean:
	rm -rf build build-san build-fuzz

.PHONY: all deps check lint check-repeat demo bench matrix soak soak-false-alarm \
	soak-saturated install uninstall clean units test-units

# make deb: build-deb/tandem_VERSION_ARCH.deb with debhelper, from a copy
# of the tree (dpkg-buildpackage cleans its tree and writes beside it), and
# lintian, where it is installed, must find no error and no warning. DEB_VERSION=x builds the same
# code as version x (the upgrade test needs a newer version).
VERSION	 = $(shell sed -n 's/.*TANDEM_VERSION "\(.*\)"/\1/p' lib/version.h)
DEB_VERSION ?= $(VERSION)
DEBSRC	 = build-deb/src/tandem

# make deb-deps: installs debian/control's Build-Depends that are missing
# (apt-get build-dep on this tree), nothing else: never the test bed's
# packages, never a runtime package.
deb-deps:
	@tests/build-deps

deb: deb-deps
	@v=$$(dpkg-parsechangelog -S Version); [ "$$v" = "$(VERSION)" ] || \
	    { echo "make deb: debian/changelog is at $$v, lib/version.h at $(VERSION)"; exit 1; }
	rm -rf build-deb/src && mkdir -p $(DEBSRC)
	cp -a Makefile LICENSE README.md contrib daemon debian docs etc lib systemd \
	    $(DEBSRC)/
	@if [ "$(DEB_VERSION)" != "$(VERSION)" ]; then \
	    { printf 'tandem (%s) unstable; urgency=medium\n\n  * Rebuilt as %s.\n\n -- %s  %s\n\n' \
	        "$(DEB_VERSION)" "$(DEB_VERSION)" \
	        "$$(dpkg-parsechangelog -S Maintainer)" "$$(date -R)"; \
	      cat debian/changelog; } > $(DEBSRC)/debian/changelog; fi
	cd $(DEBSRC) && dpkg-buildpackage -b -us -uc -j2 >../build.log 2>&1 || \
	    { tail -30 ../build.log; exit 1; }
	@if command -v lintian >/dev/null; then \
	    lintian --fail-on error,warning build-deb/src/tandem_$(DEB_VERSION)_*.changes && \
	    echo "lintian: no error, no warning"; \
	else echo "lintian is not installed: the package was not checked" \
	    "(apt-get install lintian; make deps installs it)"; fi
	mv build-deb/src/tandem_$(DEB_VERSION)_*.deb build-deb/
	@ls -l build-deb/tandem_$(DEB_VERSION)_*.deb

# make fuzz: libFuzzer on every parser of outside input, FUZZ_SECONDS each
# (tests/fuzz/run).
FUZZ_SECONDS ?= 60
fuzz: $(B)/gen/page.c
	@tests/deps clang libclang-rt-14-dev
	FUZZ_SECONDS=$(FUZZ_SECONDS) PKGS="$(PKGS)" PAGEC=$(B)/gen/page.c tests/fuzz/run

# The real tandemctl check output shown in docs/troubleshooting.md.
docs-check: all
	B=$(B) tests/gen-check-doc

.PHONY: fuzz docs-check deb deb-deps
