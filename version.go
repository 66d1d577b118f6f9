package hostguard

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is this release of hostguard, as the VERSION file at the root of
// the repository says. That file is the one source of the version: the
// binary, the Python wheels and the npm packages all take it from there.
var Version = strings.TrimSpace(versionFile)
