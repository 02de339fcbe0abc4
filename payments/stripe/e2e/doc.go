// Package e2e holds the end-to-end tests of Stripe as ticketd's payment
// provider: the real service (app.Main through app/apptest) on loopback,
// with TICKETD_PAYMENT_PROVIDER=stripe pointed at a local stripe-mock
// through a recording proxy, and webhooks signed with the test secret as
// Stripe signs them. It has no code of its own.
package e2e
