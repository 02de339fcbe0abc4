package api_test

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	nethttp "net/http"
	"strconv"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// TestMoneySchemaAcceptsEveryTwoDecimalAmount loads the served documents
// with kin-openapi and validates amounts against every money field it
// finds: every two-decimal amount (79.99 among them, which multipleOf 0.01
// refuses in floating point) is accepted, and the type is a 64-bit one.
func TestMoneySchemaAcceptsEveryTwoDecimalAmount(t *testing.T) {
	s := startService(t)
	rng := rand.New(rand.NewPCG(1, 2))
	amounts := []float64{0, 0.01, 18.5, 79.99, 99.99, 1234567.89}
	for len(amounts) < 1000 {
		cents := rng.Int64N(100_000_000)
		v, err := strconv.ParseFloat(strconv.FormatInt(cents/100, 10)+"."+strconv.FormatInt(100+cents%100, 10)[1:], 64)
		require.NoError(t, err)
		amounts = append(amounts, v)
	}
	for _, path := range []string{"/openapi.json", "/storefront/openapi.json", "/admin/openapi.json"} {
		res, err := nethttp.Get(s.URL + path)
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		doc, err := openapi3.NewLoader().LoadFromData(b)
		require.NoError(t, err, path)
		found := 0
		for name, ref := range doc.Components.Schemas {
			for prop, p := range ref.Value.Properties {
				sc := p.Value
				if sc == nil || sc.Format != "double" {
					continue
				}
				found++
				require.NotContains(t, schemaJSON(t, sc), "multipleOf", "%s %s.%s", path, name, prop)
				for _, a := range amounts {
					require.NoError(t, sc.VisitJSON(a), "%s %s.%s refuses %v", path, name, prop, a)
				}
				require.Error(t, sc.VisitJSON(-0.01), "%s %s.%s takes a negative amount", path, name, prop)
			}
		}
		require.Positive(t, found, "%s has money fields", path)
	}
}

func schemaJSON(t *testing.T, sc *openapi3.Schema) string {
	b, err := json.Marshal(sc)
	require.NoError(t, err)
	return string(b)
}
