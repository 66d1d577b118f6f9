# The README's two commands: `go run ./cmd/hostguard serve` and `make test`.
GO ?= go
PKGS ?= ./...

# staticcheck runs through `go run` at a pinned version, so that every
# machine checks with the same rules and nothing needs installing first.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# The version `hostguard version` prints; without git the binary falls back
# to the module version the go command recorded.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X github.com/hostguard/hostguard/cmd/hostguard/cli.Version=$(VERSION))

.PHONY: test race lint bench build install reliability

test:
	$(GO) test $(PKGS)

race:
	$(GO) test -race $(PKGS)

lint:
	$(GO) vet $(PKGS)
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	$(STATICCHECK) $(PKGS)
	cd bench && $(STATICCHECK) ./...

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

# kill -9 cycles against the real daemon on both engines, then every fuzz
# target for a while: about 15 minutes. RELIABILITY=short is CI's 2 minutes.
RELIABILITY ?= long
reliability:
	scripts/reliability.sh $(RELIABILITY)
