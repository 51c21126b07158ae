import MerchantCore

// The checkout page's HTML, served from memory by `WebCheckout` (no build step: edit it here).
// swift-format-ignore-file

extension WebCheckout {
    static let pageHTML = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Checkout</title>
        <link rel="stylesheet" href="/checkout.css">
        <!--SDK-->
        <script src="/checkout.js" defer></script>
        </head>
        <body>
        <a class="skip" href="#cart-heading">Skip to cart</a>
        <header>
          <h1 id="store-name">Store</h1>
          <p id="mode-banner" class="banner" hidden>Sandbox mode: payments use test cards and are never charged.</p>
        </header>
        <main>
          <section aria-labelledby="catalog-heading">
            <h2 id="catalog-heading">Products</h2>
            <ul id="catalog" class="catalog"><li>Loading products…</li></ul>
          </section>
          <section aria-labelledby="cart-heading" class="cart">
            <h2 id="cart-heading" tabindex="-1">Your cart</h2>
            <p id="cart-empty">Your cart is empty.</p>
            <ul id="cart-items" class="cart-items"></ul>
            <dl id="totals" class="totals" hidden></dl>
            <p class="note">Shipping and tax are calculated when you choose an address in Apple Pay.</p>
            <div id="pay-area" class="pay-area"></div>
            <p id="status" class="status" role="status" aria-live="polite"></p>
          </section>
          <section id="confirmation" class="confirmation" aria-labelledby="confirmation-heading" tabindex="-1" hidden>
            <h2 id="confirmation-heading">Thank you for your order</h2>
            <p>Order number <strong id="order-id"></strong></p>
            <p id="order-summary"></p>
          </section>
        </main>
        <div id="sheet-backdrop" class="sheet-backdrop" hidden>
          <div id="sheet" class="sheet" role="dialog" aria-modal="true" aria-labelledby="sheet-title"
               aria-describedby="sheet-sandbox-note">
            <h2 id="sheet-title">Apple Pay (Sandbox)</h2>
            <p id="sheet-sandbox-note" class="sandbox-note">Sandbox sheet drawn by this page: test cards only.</p>
            <form id="sheet-form" novalidate>
              <div class="field">
                <label for="sheet-card">Card</label>
                <select id="sheet-card" aria-describedby="sheet-card-error"></select>
                <p id="sheet-card-error" class="error" hidden></p>
              </div>
              <div class="field">
                <label for="sheet-contact">Ship to</label>
                <select id="sheet-contact" aria-describedby="sheet-contact-error"></select>
                <p id="sheet-contact-error" class="error" hidden></p>
              </div>
              <fieldset class="field" id="sheet-methods-field">
                <legend>Shipping method</legend>
                <div id="sheet-methods"></div>
              </fieldset>
              <div class="field">
                <label for="sheet-coupon">Coupon code</label>
                <div class="row">
                  <input id="sheet-coupon" name="coupon" autocomplete="off" autocapitalize="characters"
                         aria-describedby="sheet-coupon-error">
                  <button type="button" id="sheet-coupon-apply">Apply coupon</button>
                </div>
                <p id="sheet-coupon-error" class="error" hidden></p>
              </div>
              <dl id="sheet-lines" class="totals" aria-label="Summary"></dl>
              <p id="sheet-status" class="status" role="status" aria-live="polite"></p>
              <div class="sheet-buttons">
                <button type="submit" id="sheet-pay" class="pay">Pay</button>
                <button type="button" id="sheet-cancel">Cancel</button>
              </div>
            </form>
          </div>
        </div>
        </body>
        </html>
        """#
}
