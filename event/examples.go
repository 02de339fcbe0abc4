package event

// Example bodies for the OpenAPI documents: Example returns a request body
// as the wire shows it.

// Example returns an example body.
func (CreateEvent) Example() any {
	return map[string]any{"name": "GopherCon EU", "timezone": "Europe/Berlin", "startsAt": "2026-09-01T09:00:00Z", "endsAt": "2026-09-02T18:00:00Z"}
}

// Example returns an example body.
func (UpdateEvent) Example() any {
	return map[string]any{"status": "published", "currency": "EUR"}
}

// Example returns an example body.
func (CreateTicketType) Example() any {
	return map[string]any{"name": "General admission", "capacity": 500, "priceAmount": 49.99, "allowWaitlist": true, "isPublic": true, "requiresApproval": false, "opensAt": "2026-06-01T08:00:00Z", "closesAt": "2026-08-31T22:00:00Z"}
}

// Example returns an example body.
func (UpdateTicketType) Example() any {
	return map[string]any{"status": "open", "capacity": nil}
}

// Example returns an example body.
func (CreateRegistration) Example() any {
	return map[string]any{"email": "ada@example.com", "name": "Ada Lovelace", "registrationTypeId": "tt_01J8Z3"}
}

// Example returns an example body.
func (RejectRegistration) Example() any {
	return map[string]any{"reason": "The workshop is for members only"}
}

// Example returns an example body.
func (RecordCheckin) Example() any {
	return map[string]any{"checkinCode": "CHK-7Q2M9X4K1B8D3F5H", "subjectType": "event", "method": "scan"}
}

// Example returns an example body.
func (MintCodes) Example() any {
	return map[string]any{"registrationTypeId": "tt_01J8Z3", "count": 10, "label": "speakers", "maxUses": 1, "expiresAt": "2026-08-31T22:00:00Z"}
}

// Example returns an example body.
func (CreateAddon) Example() any {
	return map[string]any{"name": "Conference T-shirt", "priceAmount": 15, "capacity": 200}
}

// Example returns an example body.
func (UpdateAddon) Example() any { return map[string]any{"status": "open"} }

// Example returns an example body.
func (CreateBundle) Example() any {
	return map[string]any{"name": "Ticket + T-shirt", "priceAmount": 59, "capacity": 100, "items": []any{
		map[string]any{"itemType": "registration_type", "itemId": "tt_01J8Z3", "quantity": 1},
		map[string]any{"itemType": "addon", "itemId": "ao_01J8Z4", "quantity": 1},
	}}
}

// Example returns an example body.
func (UpdateBundle) Example() any { return map[string]any{"status": "open", "priceAmount": 55} }

// Example returns an example body.
func (PlaceOrder) Example() any {
	return map[string]any{"email": "ada@example.com", "name": "Ada Lovelace", "items": []any{
		map[string]any{"itemType": "registration_type", "itemId": "tt_01J8Z3", "quantity": 1},
		map[string]any{"itemType": "addon", "itemId": "ao_01J8Z4", "quantity": 2},
	}, "responses": map[string]any{"dietary": "vegetarian"}}
}

// Example returns an example body.
func (ConfirmOrder) Example() any {
	return map[string]any{"successUrl": "https://shop.example.com/thanks", "cancelUrl": "https://shop.example.com/cart"}
}

// Example returns an example body.
func (CreateCheckoutSession) Example() any {
	return map[string]any{"items": []any{map[string]any{"itemType": "registration_type", "itemId": "tt_01J8Z3", "quantity": 1}},
		"email": "ada@example.com", "returnUrl": "https://shop.example.com/tickets", "locale": "en"}
}
