# The README's two commands: `go run ./cmd/hostguard serve` and `make test`.
GO ?= go
PKGS ?= ./...

# staticcheck runs through `go run` at a pinned version, so that every
# machine checks with the same rules and nothing needs installing first.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# The binary embeds its version from the VERSION file; the commit it
# prints is stamped here, since the go command's own stamp may be off
# (GOFLAGS=-buildvcs=false).
COMMIT ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)
LDFLAGS := $(if $(COMMIT),-X github.com/hostguard/hostguard/cmd/hostguard/cli.Commit=$(COMMIT))

.PHONY: test race e2e lint bench build install reliability dist

# TESTFLAGS go to go test: CI runs make test TESTFLAGS=-race.
TESTFLAGS ?=
test:
	$(GO) test $(TESTFLAGS) $(PKGS)

race:
	$(GO) test -race $(PKGS)

# e2e/ is a module of its own for the tests whose tools the library must
# not carry in its go.mod: the OpenAPI validator and the browser driver.
e2e:
	cd e2e && $(GO) test $(TESTFLAGS) ./...

lint:
	$(GO) vet $(PKGS)
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	cd e2e && $(GO) vet ./... && $(GO) mod tidy -diff
	$(STATICCHECK) $(PKGS)
	cd bench && $(STATICCHECK) ./...
	cd e2e && $(STATICCHECK) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	bench/run.sh

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o bin/hostguard ./cmd/hostguard

# make install puts the stamped binary in $(go env GOPATH)/bin, or in
# $(PREFIX)/bin when PREFIX is given (make install PREFIX=/usr/local).
BINDIR ?= $(if $(PREFIX),$(PREFIX)/bin,$(shell $(GO) env GOPATH)/bin)
install: build
	install -d '$(DESTDIR)$(BINDIR)'
	install -m 0755 bin/hostguard '$(DESTDIR)$(BINDIR)/hostguard'

# The release for every platform into release/: archives, SHA256SUMS,
# modules.txt, Python wheels and npm packages (scripts/release.py).
# PLATFORMS="linux/amd64 linux/arm64" builds a few; NPM=0 leaves out npm.
PLATFORMS ?=
NPM ?= 1
dist:
	python3 scripts/release.py dist $(if $(PLATFORMS),--platforms '$(PLATFORMS)') $(if $(filter 0,$(NPM)),--no-npm)

# kill -9 cycles against the real daemon on both engines, then every fuzz
# target for a while: about 15 minutes. RELIABILITY=short is CI's 2 minutes.
RELIABILITY ?= long
reliability:
	scripts/reliability.sh $(RELIABILITY)
