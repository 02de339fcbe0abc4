package google

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Wallet API addresses and bounds.
const (
	APIBase    = "https://walletobjects.googleapis.com/walletobjects/v1"
	scope      = "https://www.googleapis.com/auth/wallet_object.issuer"
	apiTimeout = 10 * time.Second
	// tokenSlack renews an access token this long before it expires.
	tokenSlack = time.Minute
)

// Updater changes saved objects. API is the real one; tests use a double
// that records the ids.
type Updater interface {
	Invalidate(ctx context.Context, objectID string) error
}

// API is the Wallet REST API as the issuer's service account.
type API struct {
	// Base is the API's address (default APIBase), TokenURL the OAuth
	// token endpoint (default the key's token_uri); tests point both at a
	// local server.
	Base     string
	TokenURL string
	Client   *http.Client
	key      Key
	now      func() time.Time

	mu      sync.Mutex
	token   string
	expires time.Time
}

// NewAPI is the API client of issuer's service account.
func NewAPI(i *Issuer) *API {
	return &API{Base: APIBase, TokenURL: i.key.TokenURI, Client: &http.Client{Timeout: apiTimeout}, key: i.key, now: time.Now}
}

// Invalidate sets the object's state to INVALID. An object that does not
// exist (never saved) is left alone.
func (a *API) Invalidate(ctx context.Context, objectID string) error {
	tok, err := a.accessToken(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, strings.TrimRight(a.Base, "/")+"/eventTicketObject/"+url.PathEscape(objectID),
		bytes.NewReader([]byte(`{"state":"INVALID"}`)))
	if err != nil {
		return fmt.Errorf("google wallet: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("google wallet: invalidate %s: %w", objectID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode/100 == 2, resp.StatusCode == http.StatusNotFound:
		return nil
	case resp.StatusCode == http.StatusUnauthorized:
		a.mu.Lock()
		a.token = ""
		a.mu.Unlock()
	}
	return fmt.Errorf("google wallet: invalidate %s: answered %d: %s", objectID, resp.StatusCode, strings.TrimSpace(string(body)))
}

// accessToken is an OAuth 2.0 access token of the service account (JWT
// bearer grant, RFC 7523), kept until shortly before it expires.
func (a *API) accessToken(ctx context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.token != "" && now.Before(a.expires) {
		return a.token, nil
	}
	claims := struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}{jwt.RegisteredClaims{Issuer: a.key.ClientEmail, Audience: jwt.ClaimStrings{a.TokenURL},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}, scope}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = a.key.PrivateKeyID
	assertion, err := t.SignedString(a.key.rsa)
	if err != nil {
		return "", fmt.Errorf("google wallet: token assertion: %w", err)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("google wallet: token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("google wallet: token: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		Error       string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil || resp.StatusCode != 200 || out.AccessToken == "" {
		return "", fmt.Errorf("google wallet: token: answered %d %s", resp.StatusCode, out.Error)
	}
	a.token, a.expires = out.AccessToken, now.Add(time.Duration(out.ExpiresIn)*time.Second-tokenSlack)
	return a.token, nil
}
