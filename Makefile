# The README's two commands: `go run ./cmd/hostguard serve` and `make test`.
GO ?= go
PKGS ?= ./...

.PHONY: test race lint bench build

test:
	$(GO) test $(PKGS)

race:
	$(GO) test -race $(PKGS)

lint:
	$(GO) vet $(PKGS)
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	bench/run.sh

build:
	CGO_ENABLED=0 $(GO) build -o bin/hostguard ./cmd/hostguard
