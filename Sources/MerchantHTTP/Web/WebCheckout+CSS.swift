import MerchantCore

// The checkout page's style sheet, served from memory by `WebCheckout` (no build step: edit it here).
// swift-format-ignore-file

extension WebCheckout {
    static let styleSheet = #"""
        :root { --ink: #1d1d1f; --muted: #555; --line: #d2d2d7; --accent: #0066cc; --error: #b00020; --bg: #fff; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 -apple-system, system-ui, "Segoe UI", Roboto, sans-serif; color: var(--ink);
          background: var(--bg); }
        header, main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
        main { display: grid; gap: 1.5rem; grid-template-columns: 1fr; }
        @media (min-width: 48rem) { main { grid-template-columns: 3fr 2fr; } .confirmation { grid-column: 1 / -1; } }
        h1 { font-size: 1.6rem; margin: 0.5rem 0; }
        h2 { font-size: 1.2rem; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 1rem; top: 1rem; background: #fff; padding: 0.5rem; z-index: 10; }
        .banner { background: #fff4ce; border: 1px solid #e0c35c; padding: 0.5rem 0.75rem; border-radius: 6px; }
        ul { list-style: none; padding: 0; margin: 0; }
        .catalog li, .cart-items li { display: flex; justify-content: space-between; align-items: center; gap: 0.75rem;
          padding: 0.75rem 0; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
        .product-name { font-weight: 600; }
        .price { color: var(--muted); }
        button { font: inherit; padding: 0.5rem 1rem; border-radius: 8px; border: 1px solid var(--ink); background: #fff;
          color: var(--ink); cursor: pointer; min-height: 44px; }
        button:disabled { opacity: 0.5; cursor: not-allowed; }
        :focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        .qty { display: flex; align-items: center; gap: 0.5rem; }
        .qty button { min-width: 44px; padding: 0.25rem 0.5rem; }
        .totals { display: grid; grid-template-columns: 1fr auto; gap: 0.25rem 1rem; margin: 1rem 0; }
        .totals dt { margin: 0; }
        .totals dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
        .totals .grand { font-weight: 700; border-top: 1px solid var(--line); padding-top: 0.25rem; }
        .note { color: var(--muted); font-size: 0.9rem; }
        .pay-area { margin: 1rem 0; }
        .apple-pay-button { display: block; width: 100%; min-height: 48px; border-radius: 8px; border: 0; background: #000;
          color: #fff; font-weight: 600; font-size: 1.05rem; }
        .apple-pay-native { -webkit-appearance: -apple-pay-button; -apple-pay-button-type: buy;
          -apple-pay-button-style: black; display: block; width: 100%; min-height: 48px; }
        apple-pay-button { --apple-pay-button-width: 100%; --apple-pay-button-height: 48px;
          --apple-pay-button-border-radius: 8px; display: block; }
        .status { min-height: 1.5em; }
        .error { color: var(--error); margin: 0.25rem 0 0; font-weight: 600; }
        .confirmation { border: 2px solid #2e7d32; border-radius: 12px; padding: 1rem; }
        .sheet-backdrop { position: fixed; inset: 0; background: rgba(0, 0, 0, 0.45); display: flex;
          align-items: flex-end; justify-content: center; z-index: 20; }
        .sheet-backdrop[hidden] { display: none; }
        .sheet { background: #fff; width: 100%; max-width: 28rem; max-height: 100%; overflow-y: auto;
          border-radius: 16px 16px 0 0; padding: 1rem 1.25rem 1.5rem; }
        @media (min-width: 48rem) { .sheet-backdrop { align-items: center; } .sheet { border-radius: 16px; } }
        .sheet h2 { margin: 0; }
        .sandbox-note { color: #7a5b00; background: #fff4ce; padding: 0.25rem 0.5rem; border-radius: 6px;
          font-size: 0.9rem; }
        .field { margin: 0.75rem 0; border: 0; padding: 0; }
        .field label, .field legend { display: block; font-weight: 600; margin-bottom: 0.25rem; }
        select, input { font: inherit; width: 100%; min-height: 44px; padding: 0.4rem; border: 1px solid var(--line);
          border-radius: 8px; }
        .row { display: flex; gap: 0.5rem; }
        .row input { flex: 1; }
        .method { display: flex; gap: 0.5rem; align-items: center; padding: 0.25rem 0; }
        .method input { width: auto; min-height: 24px; }
        [aria-invalid="true"] { border-color: var(--error); }
        .sheet-buttons { display: flex; gap: 0.75rem; margin-top: 1rem; }
        .sheet-buttons button { flex: 1; }
        .sheet-buttons .pay { background: #000; color: #fff; }
        """#
}
