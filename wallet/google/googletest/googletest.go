// Package googletest makes a Google service account JSON key for tests.
package googletest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// IssuerID is a test Wallet issuer id.
const IssuerID = "3388000000012345678"

// Make writes a service account key into t's temp dir and returns its
// path and the RSA key.
func Make(t testing.TB) (string, *rsa.PrivateKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{"type": "service_account", "project_id": "ticketd-test",
		"private_key_id": "kid123", "private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "wallet@ticketd-test.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, k
}
