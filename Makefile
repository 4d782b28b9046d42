EXTENSION = flakeid
EXTVERSION = $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" flakeid.control)

MODULE_big = flakeid
OBJS = src/flakeid.o src/guc.o src/type.o src/decode.o src/generator.o src/lease.o \
	src/format.o src/wal.o
FLAKE_HEADERS = src/flakeid.h src/state.h

DATA = $(wildcard sql/flakeid--*.sql)

REGRESS = type_io soft_input on_error operators indexes casts decode \
	from_timestamp generator format upgrade schema trusted
REGRESS_OPTS = --inputdir=. --load-extension=flakeid

ISOLATION = concurrent
ISOLATION_OPTS = --inputdir=test

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# PostgreSQL's headers are system headers to us: warnings such as -Wextra's
# unused-parameter, which they trip, stay meaningful for our own code.
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server)
include $(PGXS)

$(OBJS): $(FLAKE_HEADERS)

.PHONY: test demo bench dist
test:
	test/run

demo:
	test/demo

bench:
	bench/run

# The release archive, from the committed tree: flakeid-VERSION.zip.
dist:
	test/check-meta
	git archive --format zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		-o $(EXTENSION)-$(EXTVERSION).zip HEAD

print-regress:
	@echo $(REGRESS)

print-isolation:
	@echo $(ISOLATION)
