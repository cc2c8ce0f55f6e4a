# autocdc — PGXS build.  `sh demo.sh` and `sh test.sh` are the two entry
# points for a newcomer: they install what is missing first
# (scripts/ensure-deps.sh), make included, then run `make demo` / `make test`.

EXTENSION  = autocdc
EXTVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" $(EXTENSION).control)

MODULE_big = autocdc
OBJS       = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
DATA       = $(wildcard sql/$(EXTENSION)--*.sql)

PG_CPPFLAGS = -Wall -Werror -Wno-missing-field-initializers
# Export only what PostgreSQL looks up by name (src/autocdc.h says which;
# scripts/check-exports.sh checks the built library).
PG_CFLAGS   = -fvisibility=hidden
# The catalog version the C code is written for: the newest script's.
PG_CPPFLAGS += -DAUTOCDC_CATALOG_VERSION='"$(EXTVERSION)"'

REGRESS    = install scd1_reference scd1_fold scd1_incremental scd1_errors \
             scd1_names scd1_security scd1_lifecycle fold_cases engine \
             scd2_reference scd2_history scd2_flows snapshot backfill schedule \
             collations settings_pinning retention partitions \
             schema_changes expression_pinning security bookkeeping stamps stamp_index \
             target_edits reinstall run_history run_results loading progress \
             expectations quarantine source_query bitemporal toasted_sequences \
             dialect dialect_errors dialect_ddl dialect_query dialect_expect \
             columns_to_update direct_insert direct_update typmods target_scan uninstall
REGRESS_OPTS = --inputdir=test
ISOLATION  = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

# Debian keeps one pg_config per major version; prefer 15's.
PG_CONFIG ?= $(shell if [ -x /usr/lib/postgresql/15/bin/pg_config ]; then echo /usr/lib/postgresql/15/bin/pg_config; else echo pg_config; fi)
# No LLVM bitcode: it would need clang at install time for little gain.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# The targets that install what is missing (and then call make again) work
# without PostgreSQL's headers; everything else needs them.
SETUP_GOALS = deps demo test soak valgrind bench
ifneq ($(wildcard $(PGXS)),)
include $(PGXS)
else ifneq ($(filter-out $(SETUP_GOALS),$(or $(MAKECMDGOALS),all)),)
$(error pg_config of PostgreSQL 15 not found (PG_CONFIG=$(PG_CONFIG)): install the package postgresql-server-dev-15 (as root: apt-get install postgresql-server-dev-15 gcc make), or run sh test.sh, which installs what is missing)
endif
ifneq ($(wildcard $(PGXS)),)
ifeq ($(shell command -v $(firstword $(CC)) 2>/dev/null),)
ifneq ($(filter-out $(SETUP_GOALS) clean distclean installcheck uninstall,$(or $(MAKECMDGOALS),all)),)
$(error the C compiler $(firstword $(CC)) is not installed: install the package gcc (as root: apt-get install gcc))
endif
endif
endif

# The README, installed under the extension's name rather than as a
# README.md among other extensions' documentation.
install: install-autocdc-doc
uninstall: uninstall-autocdc-doc
.PHONY: install-autocdc-doc uninstall-autocdc-doc
install-autocdc-doc:
	$(MKDIR_P) '$(DESTDIR)$(docdir)/extension'
	$(INSTALL_DATA) README.md '$(DESTDIR)$(docdir)/extension/$(EXTENSION).md'
uninstall-autocdc-doc:
	rm -f '$(DESTDIR)$(docdir)/extension/$(EXTENSION).md'

# PGXS does not track headers: rebuild every object when one changes.
$(OBJS): $(wildcard src/*.h)

PROPERTY_SEEDS ?= 3200

.PHONY: deps demo test check-exports soak valgrind bench

deps:
	@sh scripts/ensure-deps.sh test

# Build, install (scripts/install-for-tests.sh: into PostgreSQL as root,
# else into a private copy in tmp_install/), run the examples in a
# throwaway cluster.
demo:
	@sh scripts/ensure-deps.sh demo
	sh scripts/install-for-tests.sh
	sh scripts/in-cluster.sh sh examples/run-demo.sh

# Build, install as for demo, run every pg_regress, isolation and TAP test,
# the property test and a short soak in a throwaway cluster.
test: deps
	sh scripts/install-for-tests.sh
	sh scripts/in-cluster.sh sh scripts/run-tests.sh $(PROPERTY_SEEDS)

# Only what PostgreSQL looks up by name is exported (also part of make test).
check-exports: all
	sh scripts/check-exports.sh $(MODULE_big)$(DLSUFFIX)

soak: deps
	sh scripts/install-for-tests.sh
	sh scripts/in-cluster.sh sh -c 'psql -X -q -c "CREATE EXTENSION IF NOT EXISTS autocdc" && perl test/property/property.pl --soak --jobs 2 && perl test/soak/concurrent.pl --soak'

# The pg_regress and isolation tests against a server under valgrind.
valgrind: deps
	$(MAKE) install
	sh scripts/valgrind-check.sh

# Benchmarks against hand-written SQL (never part of make test); see bench/README.md.
bench: deps
	$(MAKE) install
	bash bench/run.sh
