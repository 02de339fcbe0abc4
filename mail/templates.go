package mail

import (
	"fmt"
	htmltemplate "html/template"
	texttemplate "text/template"
)

// The templates show a view (render.go): every value is formatted there.
// One template per part covers every kind, so the parts of one email
// cannot drift apart.

const textBody = `Hello{{with .Name}} {{.}}{{end}},

{{.Intro}}
{{- if .Ticket}}

Ticket: {{.TicketName}}
Check-in code: {{.CheckinCode}}
{{- with .When}}
When: {{.}}{{end}}
{{- with .Location}}
Where: {{.}}{{end}}

Your entry pass (show it at the door):
{{.PassURL}}
{{- with .PDFURL}}

Keep your ticket:
  PDF to print: {{.}}{{end}}
{{- with .AppleURL}}
  Apple Wallet: {{.}}{{end}}
{{- with .GoogleURL}}
  Google Wallet: {{.}}{{end}}

The pass page asks for this email address before it shows anything.
Keep this link to yourself: anyone with it and your email can open the pass.
{{- if .StartsAt}}
The attached calendar file (event.ics) adds the event to your calendar.{{end}}
{{- end}}
{{- with .Receipt}}

Receipt, order {{.OrderNumber}}
Paid: {{.PaidAt}}
{{range .Lines}}
  {{.Name}}: {{.Quantity}} x {{.UnitPrice}} = {{.Amount}}{{end}}
{{- with .Discount}}
  Discount: {{.}}{{end}}
  Total paid: {{.Total}}
{{- end}}
{{- with .Refund}}

Order: {{$.OrderNumber}}
Refunded now: {{.Amount}}
Refunded in all: {{.Refunded}} of {{.Total}}
{{if .Full}}This refunds the order in full{{if $.RegistrationID}}; its ticket is cancelled{{end}}.{{else}}This is a partial refund: your order and its tickets stay valid.{{end}}
{{- end}}
{{- with .Reason}}
Reason: {{.}}{{end}}
{{- if .Refund}}

The money goes back the way you paid; your bank may take a few days to show it.{{end}}
{{- if and .OrderURL (not .Ticket)}}

Your order: {{.OrderURL}}{{end}}
`

const htmlBody = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Subject}}</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;font:16px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;color:#1b1f24">
<div style="max-width:520px;margin:0 auto;background:#fff;border-radius:12px;padding:24px;border:1px solid #d8dce1">
<p>Hello{{with .Name}} {{.}}{{end}},</p>
<h1 style="font-size:22px;margin:0 0 12px">{{.Subject}}</h1>
<p>{{.Intro}}</p>
{{- if .Ticket}}
<p><strong>Ticket:</strong> {{.TicketName}}<br><strong>Check-in code:</strong> <code>{{.CheckinCode}}</code>
{{- with .When}}<br><strong>When:</strong> {{.}}{{end}}
{{- with .Location}}<br><strong>Where:</strong> {{.}}{{end}}</p>
<p><a href="{{.PassURL}}" style="display:inline-block;background:#1747b5;color:#fff;text-decoration:none;padding:12px 20px;border-radius:8px;font-weight:600">Open your entry pass</a></p>
{{- with .PDFURL}}
<p>Keep your ticket: <a href="{{.}}">PDF to print</a>{{with $.AppleURL}} · <a href="{{.}}">Add to Apple Wallet</a>{{end}}{{with $.GoogleURL}} · <a href="{{.}}">Save to Google Wallet</a>{{end}}</p>
{{- end}}
<p style="color:#4a5360;font-size:14px">Or copy this link: {{.PassURL}}<br>The pass page asks for this email address before it shows anything.
{{- if .StartsAt}}<br>The attached calendar file (event.ics) adds the event to your calendar.{{end}}</p>
{{- end}}
{{- with .Receipt}}
<h2 style="font-size:18px;margin:20px 0 8px">Receipt, order {{.OrderNumber}}</h2>
<p style="margin:0 0 8px;color:#4a5360">Paid: {{.PaidAt}}</p>
<table style="width:100%;border-collapse:collapse;font-size:15px">
<thead><tr><th style="text-align:left;border-bottom:1px solid #d8dce1">Item</th><th style="text-align:right;border-bottom:1px solid #d8dce1">Qty</th><th style="text-align:right;border-bottom:1px solid #d8dce1">Unit price</th><th style="text-align:right;border-bottom:1px solid #d8dce1">Amount</th></tr></thead>
<tbody>
{{- range .Lines}}
<tr><td>{{.Name}}</td><td style="text-align:right">{{.Quantity}}</td><td style="text-align:right;white-space:nowrap">{{.UnitPrice}}</td><td style="text-align:right;white-space:nowrap">{{.Amount}}</td></tr>
{{- end}}
{{- with .Discount}}
<tr><td colspan="3">Discount</td><td style="text-align:right;white-space:nowrap">{{.}}</td></tr>
{{- end}}
<tr><td colspan="3" style="border-top:1px solid #d8dce1"><strong>Total paid</strong></td><td style="text-align:right;white-space:nowrap;border-top:1px solid #d8dce1"><strong>{{.Total}}</strong></td></tr>
</tbody></table>
{{- end}}
{{- with .Refund}}
<p><strong>Order:</strong> {{$.OrderNumber}}<br><strong>Refunded now:</strong> {{.Amount}}<br><strong>Refunded in all:</strong> {{.Refunded}} of {{.Total}}</p>
<p>{{if .Full}}This refunds the order in full{{if $.RegistrationID}}; its ticket is cancelled{{end}}.{{else}}This is a partial refund: your order and its tickets stay valid.{{end}}</p>
{{- end}}
{{- with .Reason}}
<p><strong>Reason:</strong> {{.}}</p>
{{- end}}
{{- if .Refund}}
<p style="color:#4a5360;font-size:14px">The money goes back the way you paid; your bank may take a few days to show it.</p>
{{- end}}
{{- if and .OrderURL (not .Ticket)}}
<p><a href="{{.OrderURL}}">Your order</a></p>
{{- end}}
</div></body></html>`

func parseTemplates() (*texttemplate.Template, *htmltemplate.Template, error) {
	t, err := texttemplate.New("text").Parse(textBody)
	if err != nil {
		return nil, nil, fmt.Errorf("mail: parse text template: %w", err)
	}
	h, err := htmltemplate.New("html").Parse(htmlBody)
	if err != nil {
		return nil, nil, fmt.Errorf("mail: parse html template: %w", err)
	}
	return t, h, nil
}
