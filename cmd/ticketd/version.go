package main

import (
	"runtime/debug"
	"strings"
)

// version names a release; a release build sets it with
// -ldflags "-X main.version=v1.2.3". Empty, the build info says it.
var version string

// buildVersion is what `ticketd version` prints after the name.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return formatVersion(version, bi)
}

// formatVersion is the version (the override, else the module's; "(devel)"
// for a build inside the module), then the VCS commit and its time and
// whether the tree had uncommitted changes, then the Go version.
func formatVersion(override string, bi *debug.BuildInfo) string {
	v := override
	if v == "" && bi != nil {
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	if bi == nil {
		return v
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		if modified == "true" {
			rev += " (modified)"
		}
		parts = append(parts, "commit "+rev)
	}
	if at != "" {
		parts = append(parts, at)
	}
	return strings.Join(append(parts, bi.GoVersion), " ")
}
