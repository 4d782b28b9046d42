# The extension's version, default_version in flakeid.control: read here
# and nowhere else.  The Makefile and debian/rules include this file; a
# script asks it with: make -s -f version.mk print-version
FLAKE_TOP := $(dir $(lastword $(MAKEFILE_LIST)))
EXTVERSION := $(shell sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" $(FLAKE_TOP)flakeid.control)

.PHONY: print-version
print-version:
	@echo $(EXTVERSION)
