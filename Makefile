EXTENSION = flakeid

MODULE_big = flakeid
OBJS = src/flakeid.o src/mode.o src/guc.o src/epoch.o src/type.o src/decode.o src/format.o \
	src/shmem.o src/statefile.o src/generator.o src/worker.o src/lease.o src/wal.o \
	src/confirm.o
FLAKE_HEADERS = $(wildcard src/*.h)

DATA = $(wildcard sql/flakeid--*.sql)

REGRESS = type_io soft_input on_error operators indexes casts decode \
	from_timestamp generator format upgrade schema trusted foreign_keys \
	cluster_check uuid convert_key
REGRESS_OPTS = --inputdir=. --load-extension=flakeid

ISOLATION = concurrent
ISOLATION_OPTS = --inputdir=test --load-extension=flakeid

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)

# PostgreSQL's headers are system headers to us: warnings such as -Wextra's
# unused-parameter, which they trip, stay meaningful for our own code.
PG_CPPFLAGS = -isystem $(shell $(PG_CONFIG) --includedir-server)
include $(PGXS)
include version.mk

$(OBJS): $(FLAKE_HEADERS)

.PHONY: test demo bench dist
test:
	test/run

demo:
	test/demo

# make bench BENCH_ARGS='--quick' (bench/run --help lists the options)
bench:
	bench/run $(BENCH_ARGS)

# The release archive, from the committed tree: flakeid-VERSION.zip.
dist:
	test/check-meta
	git archive --format zip --prefix=$(EXTENSION)-$(EXTVERSION)/ \
		-o $(EXTENSION)-$(EXTVERSION).zip HEAD

print-regress:
	@echo $(REGRESS)

print-isolation:
	@echo $(ISOLATION)
