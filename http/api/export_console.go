package api

// ValidOrigin checks a publishable key's origin as the admin API does
// (the console's key form): "" when valid, else the reason.
func ValidOrigin(o string) string { return validOrigin(o) }
