package apple

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// APNs hosts. Wallet passes use the production host even for passes
// signed by a development team.
const (
	APNsProduction = "https://api.push.apple.com"
	apnsTimeout    = 10 * time.Second
)

// ErrUnregistered: APNs says the push token is no longer valid (410): the
// device removed the pass or the app; drop its registration.
var ErrUnregistered = errors.New("apple wallet: push token no longer valid")

// Pusher tells a device that a pass of pass type topic changed. APNs is
// the real one; tests use a double that records the tokens.
type Pusher interface {
	Push(ctx context.Context, topic, pushToken string) error
}

// APNs pushes over HTTP/2 to Apple's push service, authenticated by the
// pass type certificate (TLS client certificate), with the empty payload
// Wallet expects.
type APNs struct {
	// Base is the APNs address (default APNsProduction; tests point it at
	// a local HTTP/2 server).
	Base   string
	Client *http.Client
}

// NewAPNs is the APNs client of signer's certificate. roots, when set,
// replaces the system's roots (tests).
func NewAPNs(s *Signer, base string, roots *tls.Config) *APNs {
	tc := &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{s.cert.Raw}, PrivateKey: s.key, Leaf: s.cert}}}
	if roots != nil {
		tc.RootCAs = roots.RootCAs
	}
	if base == "" {
		base = APNsProduction
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, IdleConnTimeout: 5 * time.Minute,
		TLSHandshakeTimeout: apnsTimeout}
	return &APNs{Base: strings.TrimRight(base, "/"), Client: &http.Client{Transport: tr, Timeout: apnsTimeout}}
}

// Push sends one notification: POST /3/device/{token}, apns-topic the
// pass type identifier, body {}.
func (a *APNs) Push(ctx context.Context, topic, pushToken string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.Base+"/3/device/"+pushToken, bytes.NewReader([]byte("{}")))
	if err != nil {
		return fmt.Errorf("apple wallet: apns: %w", err)
	}
	req.Header.Set("apns-topic", topic)
	req.Header.Set("apns-push-type", "background")
	req.Header.Set("apns-priority", "5")
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("apple wallet: apns: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusGone:
		return ErrUnregistered
	}
	return fmt.Errorf("apple wallet: apns answered %d (%s) over %s", resp.StatusCode, strings.TrimSpace(string(body)), resp.Proto)
}
