package http

// CurrentVersion is the API version new keys are pinned to.
const CurrentVersion = "2026-08-22"

// versionHeader is the request and response header carrying the date
// version; fasthttp compares header names case-insensitively.
const versionHeader = "service-version"

// KnownVersions lists every date version the service can serve, oldest
// first. It is a function, not a variable, so no caller can mutate it.
func KnownVersions() []string { return []string{"2026-03-15", CurrentVersion} }

// ValidVersion reports whether s is a known date version.
func ValidVersion(s string) bool {
	switch s {
	case "2026-03-15", CurrentVersion:
		return true
	}
	return false
}

// internVersion returns the constant string for a known version held in a
// byte slice without allocating, and ok=false for anything else.
func internVersion(b []byte) (string, bool) {
	switch string(b) {
	case "2026-03-15":
		return "2026-03-15", true
	case CurrentVersion:
		return CurrentVersion, true
	}
	return "", false
}
