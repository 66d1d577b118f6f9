// Command hostguard is the hostguard daemon and its command-line client.
package main

import (
	"os"

	"github.com/hostguard/hostguard/cmd/hostguard/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
