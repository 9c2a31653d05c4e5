// A stand-in for konductor in the image builder's tests: as small and quick to build for
// any platform as a Go program gets, with the same `version` command and main.version.
package main

import "os"

var version = "dev"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		os.Stdout.WriteString("konductor " + version + "\n")
		return
	}
	os.Stderr.WriteString("stand-in: only `version`\n")
	os.Exit(2)
}
