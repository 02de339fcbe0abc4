package event

import (
	"net/netip"
	"net/url"
	"strings"
)

// The service sends buyers to URLs its clients give it (successUrl,
// cancelUrl, a checkout session's returnUrl) and links to the siteUrl the
// console sets. A publishable key is public (it sits in a web page), so on
// the storefront such a URL must also lie at one of the key's origins:
// otherwise anyone could make the hosted pages send buyers to any site.

// LoopbackHost reports whether host (without port or brackets) names the
// local machine: "localhost" or a loopback address. Only there is plain
// http accepted, for development.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// checkReturnURL accepts absolute https URLs, and http for loopback hosts.
func checkReturnURL(field, s string) error {
	_, err := parseReturnURL(field, s)
	return err
}

func parseReturnURL(field, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, FieldError(field, "must be an absolute URL")
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && LoopbackHost(u.Hostname())) {
		return nil, FieldError(field, "must be https (http only for localhost)")
	}
	return u, nil
}

// checkRedirect checks a URL the hosted pages will send a buyer to; empty
// is allowed (the caller decides whether the field is required). It must
// be an absolute https URL (http for loopback hosts), and on the
// storefront its origin must be one of origins, the publishable key's.
func checkRedirect(field, s string, storefront bool, origins []string) error {
	if s == "" {
		return nil
	}
	u, err := parseReturnURL(field, s)
	if err != nil || !storefront {
		return err
	}
	want := originOf(u)
	for _, o := range origins {
		if ou, err := url.Parse(o); err == nil && ou.Host != "" && originOf(ou) == want {
			return nil
		}
	}
	return FieldError(field, "must be at one of the publishable key's origins")
}

// originOf is u's origin as a browser serialises it: scheme, lower-case
// host and the port unless it is the scheme's default. Key origins are
// compared in this form, so "https://Shop.example.com:443/" in a key
// matches "https://shop.example.com/thanks".
func originOf(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host
}
