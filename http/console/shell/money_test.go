package shell

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMoneyFieldReadsLocalForms: the amounts people type, decimal comma
// included, become the JSON number the API reads; other text is passed
// on as typed for the binder to refuse.
func TestMoneyFieldReadsLocalForms(t *testing.T) {
	for in, want := range map[string]string{
		"12,50": "12.50", "12.50": "12.50", "1.234,50": "1234.50", "1,234.50": "1234.50", "€ 12,50": "12.50",
		"12,50 EUR": "12.50", "1 234,5": "1234.5", "1'250.00": "1250.00", "1,250": "1250", "1.250.000": "1250000",
		"0": "0", "49.99": "49.99", "abc": `"abc"`, "12,5,0": "1250",
	} {
		b, err := json.Marshal(MoneyField(in))
		assert.NoError(t, err)
		assert.Equal(t, want, string(b), fmt.Sprintf("%q", in))
	}
}

// TestSayWritesSentences: refusals read as a person writes them, never
// with the API's field names.
func TestSayWritesSentences(t *testing.T) {
	assert.Equal(t, "The price must be a decimal number like 49.99.", Say("priceAmount", "amount must be a decimal number like 49.99"))
	assert.Equal(t, "An event needs a start time to be published.", Say("startsAt", "an event needs a start time to be published"))
	assert.Equal(t, "The end must not be before the start.", Say("endsAt", "must not be before startsAt"))
	assert.Equal(t, "The sale end must not be before the sale start.", Say("closesAt", "must not be before opensAt"))
	assert.Equal(t, "This field must be set.", Say("mystery", "must be set"))
}
