package pages

import (
	"strconv"
	"strings"
	"time"

	"ticketd/event"
	"ticketd/internal/money"
)

// Locales of the hosted pages.
const (
	localeEN = "en"
	localeZH = "zh-CN"
)

// messages is the string table of the hosted pages, per locale. Every
// string a page shows comes from here, so a missing translation is a test
// failure (TestPagesMessagesComplete), not an English word on a Chinese page.
type messages map[string]map[string]string

func newMessages() messages {
	return messages{
		localeEN: {
			"skip":                          "Skip to content",
			"footer":                        "Secure checkout by ticketd",
			"item":                          "Item",
			"qty":                           "Qty",
			"amount":                        "Amount",
			"total":                         "Total",
			"free":                          "Free",
			"soldout":                       "sold out",
			"soldout_waitlist":              "sold out, waitlist open",
			"checkout.title":                "Checkout",
			"checkout.items":                "Your order",
			"checkout.email":                "Email",
			"checkout.email_fixed":          "Your ticket goes to",
			"checkout.name":                 "Full name",
			"checkout.addons":               "Add-ons",
			"checkout.hold_note":            "When you continue, your place is held for %s.",
			"checkout.submit_paid":          "Continue to payment",
			"checkout.submit_free":          "Get my ticket",
			"checkout.expired_title":        "This checkout link has expired",
			"checkout.expired_body":         "Go back to the event's site to start again.",
			"checkout.already_title":        "You are already registered",
			"checkout.already_body":         "This email is already registered for this event. No second ticket was sold and nothing was charged.",
			"checkout.back":                 "Back to the event site",
			"err.email":                     "Enter a valid email address.",
			"err.name":                      "Your name is too long.",
			"err.soldout":                   "Sorry, this is sold out.",
			"err.generic":                   "We could not place your order. Please check your details and try again.",
			"err.closed":                    "This sale is closed.",
			"shop.buy":                      "Buy",
			"queue.title":                   "You are in the queue",
			"queue.open":                    "This sale has a waiting room: press Buy to take your place in the queue.",
			"queue.before":                  "This sale has a waiting room. Join now: everyone who joins before the sale opens gets a random place in the queue when it opens at",
			"queue.position":                "Your place in the queue:",
			"queue.wait":                    "Estimated wait:",
			"queue.pre":                     "You are in. When the sale opens, everyone who joined before gets a random place in the queue. The sale opens at",
			"queue.keep":                    "Keep this page open: it refreshes itself.",
			"queue.admitted":                "It is your turn. Go on to checkout before your turn ends.",
			"queue.checkout":                "Go to checkout",
			"queue.soldout":                 "Sorry, this is sold out.",
			"queue.expired":                 "Your place in the queue has expired.",
			"queue.rejoin":                  "Back to the event",
			"queue.required":                "This sale has a waiting room: join the queue from the event page.",
			"err.already_open":              "This email already has an order waiting for payment in this event.",
			"err.continue_order":            "Continue that order",
			"err.hold_limit":                "Too many unpaid orders are open from your connection. Pay or cancel one, or try again once a hold lapses.",
			"err.busy":                      "The service is busy. Please try again in a moment.",
			"notfound.title":                "Page not found",
			"notfound.body":                 "This link is not valid, or no longer valid.",
			"gate.title":                    "Confirm your email",
			"gate.body":                     "To protect your ticket, enter the email address the order was placed with.",
			"gate.email":                    "Email address",
			"gate.submit":                   "Continue",
			"gate.wrong":                    "That email does not match. Check it and try again.",
			"gate.refused":                  "We could not verify this device. Please enter your email again.",
			"gate.limited":                  "Too many attempts. Please try again later.",
			"order.title":                   "Order",
			"order.already":                 "You were already registered for this event: no second ticket was sold.",
			"order.email_sent":              "Your ticket is on its way to your inbox.",
			"order.view_pass":               "View your entry pass",
			"order.pay":                     "Pay now",
			"order.continue":                "Continue checkout",
			"order.return":                  "Back to the event site",
			"order.status.open":             "Waiting for your confirmation",
			"order.status.awaiting_payment": "Waiting for payment",
			"order.status.paid":             "Paid: you are in!",
			"order.status.cancelled":        "Cancelled",
			"order.status.expired":          "Expired: the hold on your place lapsed",
			"order.cancel":                  "Cancel this order",
			"order.cancel_note":             "Changed your mind? Cancel this unpaid order and its places go back on sale.",
			"order.cancelled":               "Your order has been cancelled and its tickets released.",
			"order.cancel_refused":          "This order can no longer be cancelled.",
			"pass.title":                    "Entry pass",
			"pass.qr_alt":                   "QR code of check-in code",
			"pass.show":                     "Show this code at the entrance.",
			"pass.code":                     "Check-in code",
			"pass.ticket":                   "Ticket",
			"pass.holder":                   "Name",
			"pass.status":                   "Status",
			"pass.keep":                     "Keep your ticket",
			"pass.pdf":                      "Download PDF ticket",
			"pass.apple":                    "Add to Apple Wallet",
			"pass.google":                   "Save to Google Wallet",
			"reg.status.pending":            "Pending approval: this pass does not admit entry yet",
			"reg.status.confirmed":          "Confirmed",
			"reg.status.waitlisted":         "On the waitlist: this pass does not admit entry yet",
			"reg.status.rejected":           "Not approved: this pass does not admit entry",
			"reg.status.cancelled":          "Cancelled: this pass does not admit entry",
			"event.tickets":                 "Tickets",
			"pay.title":                     "Pay order",
			"pay.note":                      "Sandbox payment provider: no real money moves.",
			"pay.pay":                       "Pay",
			"pay.decline":                   "Decline",
			"pay.see_order":                 "See the order",
			"pay.done":                      "This payment is complete or closed:",
			"required_note":                 "Fields marked * are required.",
			"err.fields":                    "Check the fields marked below.",
			"err.required":                  "This field is required.",
			"err.answer":                    "Check this answer.",
			"err.q_email":                   "Enter an email address, like name@example.com.",
			"err.q_phone":                   "Enter a phone number: digits, with an optional leading +.",
			"err.q_date":                    "Enter a date.",
			"err.q_select":                  "Choose one of the options.",
			"err.too_long":                  "This answer is too long.",
			"soldout.waitlist":              "This ticket is sold out, but it has a waitlist: join it and you get a ticket by email if a place frees up.",
			"soldout.next":                  "It sold out while you were checking out. Change your choice if you can, or go back to the event's site for other tickets.",
			"waitlist.join":                 "Join the waitlist",
			"resend.button":                 "Resend my ticket",
			"resend.hint":                   "Lost the email? We can send your ticket again to the address you registered with.",
			"resend.sent_title":             "Check your inbox",
			"resend.sent":                   "If this email has a confirmed ticket, we have sent it again. Check your inbox, and the spam folder.",
		},
		localeZH: {
			"skip":                          "跳到正文",
			"footer":                        "由 ticketd 提供安全结账",
			"item":                          "项目",
			"qty":                           "数量",
			"amount":                        "金额",
			"total":                         "合计",
			"free":                          "免费",
			"soldout":                       "已售罄",
			"soldout_waitlist":              "已售罄，可加入候补",
			"checkout.title":                "结账",
			"checkout.items":                "您的订单",
			"checkout.email":                "电子邮箱",
			"checkout.email_fixed":          "门票将发送至",
			"checkout.name":                 "姓名",
			"checkout.addons":               "附加项目",
			"checkout.hold_note":            "继续后，您的名额将为您保留 %s。",
			"checkout.submit_paid":          "继续付款",
			"checkout.submit_free":          "领取门票",
			"checkout.expired_title":        "此结账链接已过期",
			"checkout.expired_body":         "请返回活动网站重新开始。",
			"checkout.already_title":        "您已报名",
			"checkout.already_body":         "该邮箱已报名此活动。未重复售票，也未收取任何费用。",
			"checkout.back":                 "返回活动网站",
			"err.email":                     "请输入有效的电子邮箱地址。",
			"err.name":                      "姓名过长。",
			"err.soldout":                   "抱歉，已售罄。",
			"err.generic":                   "无法下单，请检查您填写的信息后重试。",
			"err.closed":                    "本次销售已结束。",
			"shop.buy":                      "购买",
			"queue.title":                   "您正在排队",
			"queue.open":                    "本次销售设有排队等候室：点击“购买”即可排队。",
			"queue.before":                  "本次销售设有排队等候室。现在加入：开售前加入的所有人将在开售时获得随机排队位置。开售时间：",
			"queue.position":                "您的排队位置：",
			"queue.wait":                    "预计等待：",
			"queue.pre":                     "您已加入。开售时，开售前加入的所有人将获得随机排队位置。开售时间：",
			"queue.keep":                    "请保持此页面打开：它会自动刷新。",
			"queue.admitted":                "轮到您了。请在时限内前往结账。",
			"queue.checkout":                "前往结账",
			"queue.soldout":                 "抱歉，已售罄。",
			"queue.expired":                 "您的排队位置已过期。",
			"queue.rejoin":                  "返回活动页面",
			"queue.required":                "本次销售设有排队等候室：请从活动页面排队。",
			"err.already_open":              "该邮箱在此活动中已有一个待付款的订单。",
			"err.continue_order":            "继续该订单",
			"err.hold_limit":                "您的网络连接下未付款的订单过多。请先付款或取消其中一个，或待保留到期后再试。",
			"err.busy":                      "服务繁忙，请稍后重试。",
			"notfound.title":                "页面不存在",
			"notfound.body":                 "此链接无效或已失效。",
			"gate.title":                    "验证您的邮箱",
			"gate.body":                     "为保护您的门票，请输入下单时使用的电子邮箱。",
			"gate.email":                    "电子邮箱地址",
			"gate.submit":                   "继续",
			"gate.wrong":                    "邮箱不匹配，请检查后重试。",
			"gate.refused":                  "无法验证此设备，请重新输入您的邮箱。",
			"gate.limited":                  "尝试次数过多，请稍后再试。",
			"order.title":                   "订单",
			"order.already":                 "您已报名此活动：未重复售票。",
			"order.email_sent":              "门票已发送至您的邮箱。",
			"order.view_pass":               "查看入场凭证",
			"order.pay":                     "立即付款",
			"order.continue":                "继续结账",
			"order.return":                  "返回活动网站",
			"order.status.open":             "等待您确认",
			"order.status.awaiting_payment": "等待付款",
			"order.status.paid":             "已付款：报名成功！",
			"order.status.cancelled":        "已取消",
			"order.status.expired":          "已过期：名额保留时间已过",
			"order.cancel":                  "取消此订单",
			"order.cancel_note":             "改变主意了？取消这个未付款的订单后，名额将重新开放购买。",
			"order.cancelled":               "您的订单已取消，门票已释放。",
			"order.cancel_refused":          "此订单已无法取消。",
			"pass.title":                    "入场凭证",
			"pass.qr_alt":                   "签到码二维码",
			"pass.show":                     "入场时请出示此二维码。",
			"pass.code":                     "签到码",
			"pass.ticket":                   "门票",
			"pass.holder":                   "姓名",
			"pass.status":                   "状态",
			"pass.keep":                     "保存门票",
			"pass.pdf":                      "下载 PDF 门票",
			"pass.apple":                    "添加到 Apple 钱包",
			"pass.google":                   "保存到 Google 钱包",
			"reg.status.pending":            "待审核：此凭证暂不可入场",
			"reg.status.confirmed":          "已确认",
			"reg.status.waitlisted":         "候补中：此凭证暂不可入场",
			"reg.status.rejected":           "未通过审核：此凭证不可入场",
			"reg.status.cancelled":          "已取消：此凭证不可入场",
			"event.tickets":                 "门票",
			"pay.title":                     "支付订单",
			"pay.note":                      "沙盒支付：不会产生真实扣款。",
			"pay.pay":                       "支付",
			"pay.decline":                   "拒绝",
			"pay.see_order":                 "查看订单",
			"pay.done":                      "此付款已完成或已关闭：",
			"required_note":                 "标有 * 的为必填项。",
			"err.fields":                    "请检查下方标出的字段。",
			"err.required":                  "此项为必填。",
			"err.answer":                    "请检查此项回答。",
			"err.q_email":                   "请输入电子邮箱地址，例如 name@example.com。",
			"err.q_phone":                   "请输入电话号码：数字，可以 + 开头。",
			"err.q_date":                    "请输入日期。",
			"err.q_select":                  "请从选项中选择一项。",
			"err.too_long":                  "回答过长。",
			"soldout.waitlist":              "此门票已售罄，但可加入候补名单：一旦有名额空出，我们会通过邮件发送门票。",
			"soldout.next":                  "在您结账期间已售罄。您可以更改选择，或返回活动网站查看其他门票。",
			"waitlist.join":                 "加入候补名单",
			"resend.button":                 "重新发送我的门票",
			"resend.hint":                   "找不到邮件？我们可以将门票重新发送到您报名时使用的邮箱。",
			"resend.sent_title":             "请查看您的邮箱",
			"resend.sent":                   "如果此邮箱有已确认的门票，我们已重新发送，请查看收件箱及垃圾邮件文件夹。",
		},
	}
}

// loc is the locale of one page render; templates call .L.T "key".
type loc struct {
	Lang string
	m    map[string]string
}

// T returns the string of key; an unknown key shows itself so a test sees it.
func (l loc) T(key string) string {
	if s, ok := l.m[key]; ok {
		return s
	}
	return key
}

// Tf is T with its %s filled by arg.
func (l loc) Tf(key, arg string) string { return strings.Replace(l.T(key), "%s", arg, 1) }

// Duration says d in the page's language, in whole minutes when it is
// some, else in seconds.
func (l loc) Duration(d time.Duration) string {
	n, unit := int64(d/time.Second), "second"
	if d >= time.Minute && d%time.Minute == 0 {
		n, unit = int64(d/time.Minute), "minute"
	}
	if l.Lang == localeZH {
		if unit == "minute" {
			return strconv.FormatInt(n, 10) + " 分钟"
		}
		return strconv.FormatInt(n, 10) + " 秒"
	}
	if n != 1 {
		unit += "s"
	}
	return strconv.FormatInt(n, 10) + " " + unit
}

func (ms messages) loc(lang string) loc {
	if _, ok := ms[lang]; !ok {
		lang = localeEN
	}
	return loc{Lang: lang, m: ms[lang]}
}

// Money writes an amount the way the page's language writes money (see
// money.Format: as the currency's own locale writes it ("1.218,50 €",
// "$1,218.50") in English, "€1,218.50" in Simplified
// Chinese); the console writes it the same way.
func (l loc) Money(m event.Money, currency string) string { return money.Format(m, currency, l.Lang) }

// pickLocale returns the locale a page speaks: the explicit one (a
// checkout session's) when known, else the first Accept-Language range the
// pages speak, else English.
func pickLocale(explicit, acceptLanguage string) string {
	switch explicit {
	case localeEN, localeZH:
		return explicit
	}
	for i, part := range strings.Split(acceptLanguage, ",") {
		if i >= 20 { // bound the work on a hostile header
			break
		}
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.ToLower(tag)
		switch {
		case tag == "en" || strings.HasPrefix(tag, "en-"):
			return localeEN
		case tag == "zh" || strings.HasPrefix(tag, "zh-"):
			// zh-TW/zh-Hant readers still read Simplified better than English.
			return localeZH
		}
	}
	return localeEN
}
