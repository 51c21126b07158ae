// The checkout page: catalog, cart, and Apple Pay. With window.ApplePaySession (Safari, or Apple's SDK) it runs
// Apple's payment sheet; in sandbox mode without it, SandboxSession draws a sheet with the same events, calling
// the same server endpoints in the same order. No third-party code; every request goes to this server.
"use strict";

(function () {
  // `planConflict`: the plans of a cart the server refused with `planNotAlone` (a plan is bought alone, quantity 1).
  const state = { config: null, products: [], cart: new Map(), checkout: null, checkoutFor: "", pending: null,
    planConflict: null };
  const $ = (id) => document.getElementById(id);

  // One request to this server; `headers` adds to the JSON ones (a checkout's routes: its Checkout-Secret).
  async function api(method, path, body, headers) {
    const options = { method, headers: Object.assign({ Accept: "application/json" }, headers || {}) };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    let json = null;
    try { json = await response.json(); } catch (_) { json = null; }
    return { status: response.status, ok: response.ok, json: json || {} };
  }

  function money(amount) {
    const currency = (state.config && state.config.currencyCode) || "USD";
    const value = Number(amount);
    try {
      return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(value);
    } catch (_) {
      return amount + " " + currency;
    }
  }

  function say(text) { $("status").textContent = text; }

  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value);
    }
    for (const child of children) node.append(child);
    return node;
  }

  // MARK: Catalog and cart

  function renderCatalog() {
    const list = $("catalog");
    list.replaceChildren();
    for (const product of state.products) {
      list.append(element("li", {},
        element("span", {}, element("span", { class: "product-name", text: product.name }), " ",
          element("span", { class: "price", text: money(product.price) })),
        element("button", {
          type: "button", "data-sku": product.sku, "aria-label": "Add " + product.name + " to cart",
          text: "Add to cart", onclick: () => changeQuantity(product.sku, 1),
        })));
    }
  }

  function changeQuantity(sku, delta) {
    const quantity = (state.cart.get(sku) || 0) + delta;
    if (quantity <= 0) state.cart.delete(sku); else state.cart.set(sku, Math.min(quantity, 99));
    const product = state.products.find((p) => p.sku === sku);
    say(product ? `${product.name}: ${state.cart.get(sku) || 0} in cart.` : "");
    renderCart();
    refreshCheckout();
  }

  function renderCart() {
    const list = $("cart-items");
    list.replaceChildren();
    for (const [sku, quantity] of state.cart) {
      const product = state.products.find((p) => p.sku === sku);
      if (!product) continue;
      list.append(element("li", {},
        element("span", { text: `${product.name} × ${quantity}` }),
        element("span", { class: "qty" },
          element("button", { type: "button", "aria-label": `Remove one ${product.name}`, text: "−",
            onclick: () => changeQuantity(sku, -1) }),
          element("button", { type: "button", "aria-label": `One more ${product.name}`, text: "+",
            onclick: () => changeQuantity(sku, 1) }))));
    }
    $("cart-empty").hidden = state.cart.size > 0;
    renderTotals();
    updatePayButton();
  }

  // The totals of the current cart only: none while it is being priced or when it could not be.
  function renderTotals() {
    const totals = $("totals");
    totals.replaceChildren();
    const request = state.checkout && state.checkout.paymentRequest;
    if (!request || state.cart.size === 0 || state.checkoutFor !== cartKey()) { totals.hidden = true; return; }
    for (const item of request.lineItems || []) {
      totals.append(element("dt", { text: item.label }), element("dd", { text: money(item.amount) }));
    }
    totals.append(element("dt", { class: "grand", text: "Total" }),
      element("dd", { class: "grand", text: money(request.total.amount) }));
    totals.hidden = false;
  }

  function cartKey() { return JSON.stringify([...state.cart.entries()]); }

  // A plan (a product with a billing plan) is bought alone, quantity 1, as Apple takes one plan per payment. When
  // the server refuses the cart for that, say so in plain words, with a one-click way out for each plan in it.
  function renderPlanNotice() {
    const notice = $("plan-notice");
    const plans = state.planConflict || [];
    if (plans.length === 0) { notice.replaceChildren(); return; }
    const names = plans.map((p) => p.name).join(" and ");
    const text = plans.length === 1
      ? `${names} is a plan: it is bought on its own, one at a time, not together with other products.`
      : `${names} are plans: each is bought on its own, one at a time, not together with other products.`;
    const choices = element("div", { class: "choices" });
    for (const plan of plans) {
      const alone = plans.length === 1 ? "Buy the plan on its own" : `Buy ${plan.name} on its own`;
      choices.append(
        element("button", { type: "button", text: alone, onclick: () => buyPlanAlone(plan),
          "aria-label": `Buy ${plan.name} on its own: the other products leave the cart` }),
        element("button", { type: "button", text: `Remove ${plan.name}`, onclick: () => removeFromCart(plan),
          "aria-label": `Remove ${plan.name} from the cart` }));
    }
    notice.replaceChildren(element("p", { id: "plan-notice-text", text }), choices);
  }

  function buyPlanAlone(plan) {
    state.cart.clear();
    state.cart.set(plan.sku, 1);
    cartChanged(`${plan.name} on its own in the cart; the other products were removed.`);
  }

  function removeFromCart(product) {
    state.cart.delete(product.sku);
    cartChanged(`${product.name} removed from the cart.`);
  }

  // After a button that disappears with the notice: focus goes back to the cart, and the status says what changed.
  function cartChanged(message) {
    state.planConflict = null;
    renderPlanNotice();
    renderCart();
    say(message);
    $("cart-heading").focus();
    refreshCheckout();
  }

  // A checkout for the current cart is kept ready, so that the Apple Pay button can open a session at once
  // (Safari requires the session to be created inside the click handler).
  async function refreshCheckout() {
    const key = cartKey();
    state.checkout = null;
    state.planConflict = null;
    if (state.cart.size === 0) {
      state.checkoutFor = key;
      renderPlanNotice(); renderTotals(); updatePayButton();
      return;
    }
    renderTotals();
    updatePayButton();
    const items = [...state.cart.entries()].map(([sku, quantity]) => ({ sku, quantity }));
    const reply = await api("POST", "/v1/checkouts", { items });
    if (cartKey() !== key) return;  // the cart changed meanwhile: a newer refresh is on its way
    const error = reply.json.error || {};
    if (!reply.ok && error.code === "planNotAlone") {
      state.planConflict = state.products.filter((p) => p.plan && state.cart.has(p.sku));
      renderPlanNotice();
      updatePayButton();
      return;
    }
    renderPlanNotice();
    if (!reply.ok) { say("Could not price the cart: " + (error.message || reply.status)); return; }
    state.checkout = reply.json;
    state.checkoutFor = key;
    renderTotals();
    updatePayButton();
  }

  // MARK: The Apple Pay button

  function applePayAvailable() {
    try { return !!(window.ApplePaySession && window.ApplePaySession.canMakePayments()); } catch (_) { return false; }
  }

  function renderPayButton() {
    const area = $("pay-area");
    area.replaceChildren();
    let button;
    if (applePayAvailable() && window.customElements && window.customElements.get("apple-pay-button")) {
      button = element("apple-pay-button", { buttonstyle: "black", type: "buy", locale: "en-US", role: "button",
        tabindex: "0", "aria-label": "Buy with Apple Pay" });
      button.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); startPayment(); }
      });
    } else if (applePayAvailable()) {
      button = element("button", { type: "button", class: "apple-pay-native", "aria-label": "Buy with Apple Pay" });
    } else if (state.config.sandbox) {
      button = element("button", { type: "button", class: "apple-pay-button", id: "apple-pay",
        "aria-label": "Buy with Apple Pay (sandbox)", text: "Buy with Apple Pay" });
    } else {
      area.append(element("p", { text: "Apple Pay is not available in this browser. Open this page in Safari." }));
      return;
    }
    button.id = "apple-pay";
    button.addEventListener("click", startPayment);
    area.append(button);
    updatePayButton();
  }

  function updatePayButton() {
    const button = $("apple-pay");
    if (!button) return;
    const ready = !!state.checkout && state.checkoutFor === cartKey() && state.cart.size > 0 && !state.pending;
    if (button.tagName === "BUTTON") button.disabled = !ready;
    button.setAttribute("aria-disabled", String(!ready));
    // Why it cannot be pressed, read with the button.
    if (state.planConflict) button.setAttribute("aria-describedby", "plan-notice");
    else button.removeAttribute("aria-describedby");
  }

  // MARK: The payment flow, written once against ApplePaySession's interface

  function supportedVersion() {
    for (const version of [14, 12, 10, 6, 3]) {
      try { if (window.ApplePaySession.supportsVersion(version)) return version; } catch (_) { /* next */ }
    }
    return 3;
  }

  // Update dictionaries from the server carry plain error objects; Safari wants ApplePayError instances.
  function withApplePayErrors(update) {
    if (!update || !update.errors || !window.ApplePayError) return update;
    return Object.assign({}, update, {
      errors: update.errors.map((e) => new window.ApplePayError(e.code, e.contactField, e.message)),
    });
  }

  function startPayment() {
    const checkout = state.checkout;
    if (!checkout || state.pending || state.checkoutFor !== cartKey()) return;
    const real = applePayAvailable();
    const session = real
      ? new window.ApplePaySession(supportedVersion(), checkout.paymentRequest)
      : new SandboxSession(checkout, state.config, state.wallet);
    state.pending = session;
    updatePayButton();
    const id = checkout.id;
    const base = `/v1/checkouts/${encodeURIComponent(id)}`;
    // The checkout's routes want its client secret (the creation answer's clientSecret); its id opens nothing.
    const secret = { "Checkout-Secret": checkout.clientSecret || "" };
    const adapt = real ? withApplePayErrors : (u) => u;
    const failure = real ? window.ApplePaySession.STATUS_FAILURE : 1;
    const success = real ? window.ApplePaySession.STATUS_SUCCESS : 0;

    session.onvalidatemerchant = async (event) => {
      const reply = await api("POST", "/v1/apple-pay/merchant-session", { validationURL: event.validationURL });
      if (!reply.ok) {
        say("Apple Pay could not be started: " + ((reply.json.error || {}).message || `HTTP ${reply.status}`));
        session.abort();
        finish();
        return;
      }
      session.completeMerchantValidation(reply.json);
    };
    session.onpaymentmethodselected = async (event) => {
      const reply = await api("POST", base + "/payment-method", event.paymentMethod || {}, secret);
      session.completePaymentMethodSelection(adapt(reply.json));
    };
    session.onshippingcontactselected = async (event) => {
      const reply = await api("POST", base + "/shipping-contact", event.shippingContact || {}, secret);
      session.completeShippingContactSelection(adapt(reply.json));
    };
    session.onshippingmethodselected = async (event) => {
      const method = { identifier: event.shippingMethod.identifier };
      const reply = await api("POST", base + "/shipping-method", method, secret);
      session.completeShippingMethodSelection(adapt(reply.json));
    };
    session.oncouponcodechanged = async (event) => {
      const reply = await api("POST", base + "/coupon", { couponCode: event.couponCode }, secret);
      session.completeCouponCodeChange(adapt(reply.json));
    };
    session.onpaymentauthorized = async (event) => {
      const reply = await api("POST", base + "/payment", event.payment, secret);
      const answer = reply.json;
      if (reply.status === 200 && answer.status === "success") {
        session.completePayment({ status: success });
        finish();
        showConfirmation(answer.orderId, answer.orderSecret, answer.managementURL);
        return;
      }
      const message = (answer.error && answer.error.message) ||
        (reply.status === 202 ? "The payment outcome is not known yet; we will email you." : "The payment failed.");
      session.completePayment(adapt({ status: failure, errors: answer.errors || [], message }));
      if (real) { finish(); say(message); }
    };
    session.oncancel = () => {
      finish();
      say("Payment cancelled. Your cart is unchanged.");
    };
    session.begin();
  }

  function finish() {
    state.pending = null;
    updatePayButton();
    const button = $("apple-pay");
    if (button) button.focus();
  }

  async function showConfirmation(orderId, secret, managementURL) {
    $("order-id").textContent = orderId;
    $("confirmation").hidden = false;
    // A plan: the subscription's page (plan, charges, card, cancel), the same link Apple shows in Wallet.
    $("subscription-area").hidden = !managementURL;
    if (managementURL) $("subscription-link").href = managementURL;
    state.cart.clear();
    state.checkout = null;
    renderCart();
    say(`Payment complete. Order ${orderId}.`);
    $("confirmation").focus();
    const reply = await api("GET", `/v1/orders/${encodeURIComponent(orderId)}?secret=${encodeURIComponent(secret || "")}`);
    if (reply.ok && reply.json.totals) {
      const items = (reply.json.items || []).map((i) => `${i.name || i.sku} × ${i.quantity}`).join(", ");
      $("order-summary").textContent = `${items}. Paid ${money(reply.json.totals.total)}.`;
    }
  }

  // MARK: The sandbox sheet: ApplePaySession's interface, drawn by the page

  class SandboxSession {
    constructor(checkout, config, wallet) {
      this.checkout = checkout;
      this.config = config;
      this.wallet = wallet;
      this.request = checkout.paymentRequest;
      this.total = this.request.total;
      this.lineItems = this.request.lineItems || [];
      this.methods = this.request.shippingMethods || [];
      this.method = this.methods.length ? this.methods[0].identifier : null;
      this.card = wallet.cards[0];
      this.contact = wallet.contacts[0];
      this.errors = [];
      this.busy = false;
      this.closed = false;
      this.queue = Promise.resolve();
    }

    // Events go one at a time, as in Apple's sheet: each waits for the merchant's completion call.
    dispatch(name, event) {
      this.queue = this.queue.then(() => new Promise((resolve) => {
        if (this.closed || typeof this[name] !== "function") { resolve(); return; }
        this.resolveEvent = resolve;
        this.setBusy(true);
        Promise.resolve(this[name](event)).catch((error) => {
          this.status("The merchant did not answer: " + error);
          resolve();
        });
      }));
      return this.queue;
    }

    settle(update) {
      if (update) this.apply(update);
      this.setBusy(false);
      const resolve = this.resolveEvent;
      this.resolveEvent = null;
      if (resolve) resolve();
    }

    begin() {
      this.open();
      this.status("Contacting Apple Pay…");
      this.dispatch("onvalidatemerchant", { validationURL: this.config.sandboxValidationURL });
    }

    completeMerchantValidation(merchantSession) {
      this.merchantSession = merchantSession;
      this.settle(null);
      this.status("");
      // What Safari sends once the sheet shows: the default card, then the default contact (redacted).
      this.dispatch("onpaymentmethodselected", { paymentMethod: this.paymentMethod() });
      this.dispatch("onshippingcontactselected", { shippingContact: this.redacted(this.contact) });
    }

    completePaymentMethodSelection(update) { this.settle(update); }
    completeShippingContactSelection(update) { this.settle(update); }
    completeShippingMethodSelection(update) { this.settle(update); }
    completeCouponCodeChange(update) { this.settle(update); }

    completePayment(result) {
      const status = typeof result === "number" ? result : result.status;
      if (status === 0) {
        this.settle(null);
        this.close();
        return;
      }
      this.settle({ errors: result.errors || [] });
      if (!result.errors || result.errors.length === 0) this.status(result.message || "The payment failed.");
      this.paying = false;
    }

    abort() { this.settle(null); this.close(); }

    paymentMethod() {
      return { displayName: this.card.displayName, network: this.card.network, type: this.card.type };
    }

    redacted(contact) {
      const { locality, administrativeArea, postalCode, country, countryCode } = contact;
      return { locality, administrativeArea, postalCode: (postalCode || "").slice(0, 5), country, countryCode };
    }

    apply(update) {
      if (update.newTotal) this.total = update.newTotal;
      if (update.newLineItems) this.lineItems = update.newLineItems;
      if (update.newShippingMethods) {
        this.methods = update.newShippingMethods;
        if (!this.methods.some((m) => m.identifier === this.method)) {
          this.method = this.methods.length ? this.methods[0].identifier : null;
        }
      }
      this.errors = update.errors || [];
      this.render();
    }

    // MARK: Drawing

    open() {
      const card = $("sheet-card");
      card.replaceChildren(...this.wallet.cards.map((c, i) => element("option", { value: String(i), text: c.displayName })));
      const contact = $("sheet-contact");
      contact.replaceChildren(...this.wallet.contacts.map((c, i) => element("option", { value: String(i),
        text: `${c.givenName} ${c.familyName}, ${c.addressLines[0]}, ${c.locality} ${c.postalCode}, ${c.countryCode}` })));
      $("sheet-coupon").value = "";
      this.listeners = [
        [card, "change", () => {
          this.card = this.wallet.cards[Number(card.value)];
          this.dispatch("onpaymentmethodselected", { paymentMethod: this.paymentMethod() });
        }],
        [contact, "change", () => {
          this.contact = this.wallet.contacts[Number(contact.value)];
          this.dispatch("onshippingcontactselected", { shippingContact: this.redacted(this.contact) });
        }],
        [$("sheet-coupon-apply"), "click", () => this.applyCoupon()],
        [$("sheet-coupon"), "keydown", (event) => {
          if (event.key === "Enter") { event.preventDefault(); this.applyCoupon(); }
        }],
        [$("sheet-form"), "submit", (event) => { event.preventDefault(); this.pay(); }],
        [$("sheet-cancel"), "click", () => this.cancel()],
        [$("sheet-backdrop"), "keydown", (event) => this.keydown(event)],
      ];
      for (const [node, type, handler] of this.listeners) node.addEventListener(type, handler);
      $("sheet-backdrop").hidden = false;
      this.render();
      card.focus();
    }

    close() {
      if (this.closed) return;
      this.closed = true;
      for (const [node, type, handler] of this.listeners || []) node.removeEventListener(type, handler);
      $("sheet-backdrop").hidden = true;
    }

    keydown(event) {
      if (event.key === "Escape") { event.preventDefault(); this.cancel(); return; }
      if (event.key !== "Tab") return;
      // Keep focus inside the dialog.
      const focusable = [...$("sheet").querySelectorAll("select, input, button")].filter((n) => !n.disabled);
      if (focusable.length === 0) return;
      const first = focusable[0], last = focusable[focusable.length - 1];
      if (event.shiftKey && document.activeElement === first) { event.preventDefault(); last.focus(); }
      else if (!event.shiftKey && document.activeElement === last) { event.preventDefault(); first.focus(); }
    }

    status(text) { $("sheet-status").textContent = text; }

    setBusy(busy) {
      this.busy = busy;
      $("sheet").setAttribute("aria-busy", String(busy));
      $("sheet-pay").disabled = busy || this.blockingErrors().length > 0 || !this.merchantSession;
      if (busy) this.status("Updating…"); else if ($("sheet-status").textContent === "Updating…") this.status("");
    }

    blockingErrors() {
      return this.errors.filter((e) => !/^coupon/.test(e.code));
    }

    render() {
      $("sheet-card").value = String(this.wallet.cards.indexOf(this.card));
      $("sheet-contact").value = String(this.wallet.contacts.indexOf(this.contact));
      const methods = $("sheet-methods");
      methods.replaceChildren();
      this.methods.forEach((method, index) => {
        const id = `sheet-method-${index}`;
        const input = element("input", { type: "radio", name: "shipping-method", id, value: method.identifier });
        input.checked = method.identifier === this.method;
        input.addEventListener("change", () => {
          this.method = method.identifier;
          this.dispatch("onshippingmethodselected", { shippingMethod: method });
        });
        methods.append(element("div", { class: "method" }, input,
          element("label", { for: id, text: `${method.label}: ${money(method.amount)} (${method.detail || ""})` })));
      });
      $("sheet-methods-field").hidden = this.methods.length === 0;
      const lines = $("sheet-lines");
      lines.replaceChildren();
      for (const item of this.lineItems) {
        lines.append(element("dt", { text: item.label }), element("dd", { text: money(item.amount) }));
      }
      lines.append(element("dt", { class: "grand", text: `Pay ${this.total.label}` }),
        element("dd", { class: "grand", id: "sheet-total", text: money(this.total.amount) }));
      this.showErrors();
      $("sheet-pay").disabled = this.busy || this.blockingErrors().length > 0 || !this.merchantSession;
    }

    // Each error next to the field it concerns.
    showErrors() {
      const fields = { card: [], contact: [], coupon: [], other: [] };
      for (const error of this.errors) {
        if (/^coupon/.test(error.code)) fields.coupon.push(error.message);
        else if (error.code === "billingContactInvalid") fields.card.push(error.message);
        else if (error.code === "shippingContactInvalid" || error.code === "addressUnserviceable") {
          fields.contact.push(error.message);
        } else fields.other.push(error.message || error.code);
      }
      const show = (name, input, messages) => {
        const node = $(`sheet-${name}-error`);
        node.textContent = messages.join(" ");
        node.hidden = messages.length === 0;
        $(input).setAttribute("aria-invalid", String(messages.length > 0));
      };
      show("card", "sheet-card", fields.card);
      show("contact", "sheet-contact", fields.contact);
      show("coupon", "sheet-coupon", fields.coupon);
      if (fields.other.length) this.status(fields.other.join(" "));
    }

    applyCoupon() {
      this.dispatch("oncouponcodechanged", { couponCode: $("sheet-coupon").value.trim() });
    }

    cancel() {
      if (this.closed) return;
      this.close();
      if (typeof this.oncancel === "function") this.oncancel({});
    }

    // Pay: what the device does on authorization. The sandbox mints a token for the checkout's current total.
    async pay() {
      if (this.busy || this.paying || this.blockingErrors().length > 0) return;
      this.paying = true;
      this.setBusy(true);
      this.status("Paying…");
      const minted = await api("POST", "/v1/sandbox/tokens", { checkoutId: this.checkout.id, card: this.card.id });
      if (!minted.ok) {
        this.paying = false;
        this.setBusy(false);
        this.status("The sandbox could not make a token: " + ((minted.json.error || {}).message || minted.status));
        return;
      }
      this.setBusy(false);
      const payment = {
        token: minted.json.token,
        billingContact: this.wallet.billingContact,
        shippingContact: this.contact,
      };
      await this.dispatch("onpaymentauthorized", { payment });
    }
  }

  // MARK: Start

  async function start() {
    const [config, products] = await Promise.all([api("GET", "/v1/web/config"), api("GET", "/v1/products")]);
    state.config = config.json;
    state.products = products.json.products || [];
    document.title = `${state.config.storeName} · Checkout`;
    $("store-name").textContent = state.config.storeName;
    $("mode-banner").hidden = !state.config.sandbox;
    if (state.config.sandbox) {
      const wallet = await api("GET", "/v1/sandbox/wallet");
      state.wallet = wallet.json;
    }
    renderCatalog();
    renderCart();
    renderPayButton();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
