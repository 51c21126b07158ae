#!/usr/bin/env python3
"""The checkout page in headless Chromium, end to end.

Starts `applepay sandbox gateway` and `applepay serve --sandbox DIR --sandbox-gateway URL` (admin API on), then
drives the page through the sandbox sheet: a purchase with express shipping; an unserviceable address, then a
serviceable one; an invalid coupon, then a valid one; another card; a plan put in the cart with another product (the page says a plan is bought on its
own, and its button leaves the plan alone); a plan paid with a merchant token, its charge on its management page, then
cancelled from its management page (the Cancel button clicked); a cancel. Then checks the store through the
admin API (one paid order per completed purchase, none for the cancel), that the page loaded nothing from another
host, and that merchant validation went through the sandbox gateway with the Merchant Identity certificate.

Usage: browser_checkout.py APPLEPAY_BINARY WORK_DIR [SCREENSHOT_DIR]
Prints one JSON line per step; exits 0 when every check passed, 1 on a failed check, 77 when Chromium, its
driver or Selenium is missing (scripts/setup.sh installs them).
"""
import hashlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request

TIMEOUT = 90  # seconds for any one wait: generous, the machine is shared and busy

try:
    from selenium import webdriver
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    print("SKIP: selenium is not installed (scripts/setup.sh installs it)", file=sys.stderr)
    sys.exit(77)


def find_tool(*names):
    for name in names:
        path = shutil.which(name) or (name if os.path.exists(name) else None)
        if path:
            return path
    return None


CHROMIUM = find_tool("chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome")
DRIVER = find_tool("chromedriver", "/usr/bin/chromedriver")
if not CHROMIUM or not DRIVER:
    print("SKIP: chromium and chromium-driver are not installed (scripts/setup.sh installs them)", file=sys.stderr)
    sys.exit(77)


class Failure(Exception):
    pass


def step(name, **fields):
    print(json.dumps({"step": name, **fields}), flush=True)


def check(condition, message):
    if not condition:
        raise Failure(message)


def start(arguments, log_path, pattern):
    """Starts a child; returns (process, first match of `pattern` in its standard output)."""
    out_path = log_path + ".out"
    process = subprocess.Popen(arguments, stdout=open(out_path, "w"), stderr=open(log_path, "w"),
                               start_new_session=True)
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        with open(out_path) as handle:
            match = re.search(pattern, handle.read())
        if match:
            return process, match.group(1)
        if process.poll() is not None:
            raise Failure(f"{arguments[1]} exited {process.returncode}: {open(log_path).read()[-2000:]}")
        time.sleep(0.1)
    raise Failure(f"{arguments[:3]} did not start within {TIMEOUT} s")


class Page:
    def __init__(self, driver, base):
        self.driver = driver
        self.base = base
        # A page that is navigating (a form posted, as Cancel does) can answer a look-up with a driver error of its
        # own ("target frame detached" and the like): the condition is asked again until TIMEOUT, as for a stale
        # element, and only the timeout fails the step.
        self.wait = WebDriverWait(driver, TIMEOUT, poll_frequency=0.1,
                                  ignored_exceptions=(StaleElementReferenceException, WebDriverException))

    def until(self, condition, message):
        try:
            return self.wait.until(lambda _: condition())
        except Exception as error:  # TimeoutException, with the reason we were waiting
            raise Failure(f"timed out waiting for {message} ({type(error).__name__})")

    def button_named(self, predicate, root=None):
        for button in (root or self.driver).find_elements(By.CSS_SELECTOR, "button, [role=button]"):
            if button.is_displayed() and predicate(button.accessible_name or ""):
                return button
        return None

    def add(self, product_name):
        button = self.until(lambda: self.button_named(
            lambda name: name.startswith("Add") and product_name in name), f"the Add button of {product_name}")
        button.click()

    def apple_pay_button(self):
        return self.until(lambda: self.button_named(lambda name: "Apple Pay" in name), "the Apple Pay button")

    def dialog(self):
        for node in self.driver.find_elements(By.CSS_SELECTOR, "[role=dialog]"):
            if node.is_displayed() and "Apple Pay" in (node.accessible_name or ""):
                return node
        return None

    def open_sheet(self):
        button = self.apple_pay_button()
        self.until(lambda: button.get_attribute("aria-disabled") == "false", "the Apple Pay button to be enabled")
        button.click()
        sheet = self.until(self.dialog, "the sandbox sheet (a dialog named Apple Pay)")
        check("sandbox" in (sheet.accessible_name or "").lower() or "Sandbox" in sheet.text,
              "the sheet says it is a sandbox")
        self.until(lambda: self.pay_button().is_enabled(), "the Pay button to be enabled")
        return sheet

    def pay_button(self):
        return self.until(lambda: self.button_named(lambda name: name == "Pay", self.dialog()), "the Pay button")

    def total(self):
        return self.driver.find_element(By.ID, "sheet-total").text

    def settled(self):
        return self.driver.find_element(By.ID, "sheet").get_attribute("aria-busy") == "false"

    def pay(self):
        self.until(self.settled, "the sheet to finish updating")
        self.pay_button().click()
        self.until(lambda: self.dialog() is None, "the sheet to close after paying")
        order = self.until(lambda: re.search(r"ord_[0-9a-f]+", self.driver.find_element(By.ID, "order-id").text),
                           "the order id on the page").group(0)
        return order

    def error(self, field):
        node = self.driver.find_element(By.ID, f"sheet-{field}-error")
        return node.text if node.is_displayed() else ""


def main():
    applepay, work = sys.argv[1], sys.argv[2]
    screenshots = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(work, exist_ok=True)
    sandbox = os.path.join(work, "sandbox")
    subprocess.run([applepay, "sandbox", "init", sandbox, "--merchant-id", "merchant.com.example.browser"],
                   check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
    children = []
    driver = None
    try:
        gateway, gateway_url = start([applepay, "sandbox", "gateway", "--port", "0", sandbox],
                                     os.path.join(work, "gateway.log"), r"gateway on (https://\S+)")
        children.append(gateway)
        admin_token = "browser-test-admin-token-0123456789abcdef"
        environment = dict(os.environ, APPLEPAY_ADMIN_TOKEN=admin_token)
        server = subprocess.Popen(
            [applepay, "serve", "--sandbox", sandbox, "--sandbox-gateway", gateway_url,
             "--store", "sqlite:" + os.path.join(work, "orders.sqlite"), "--port", "0"],
            stdout=open(os.path.join(work, "server.out"), "w"), stderr=open(os.path.join(work, "server.log"), "w"),
            env=environment, start_new_session=True)
        children.append(server)
        deadline = time.time() + TIMEOUT
        base = None
        while time.time() < deadline and not base:
            match = re.search(r"on (http://\S+)", open(os.path.join(work, "server.out")).read())
            base = match.group(1) if match else None
            if not base:
                check(server.poll() is None, "the server exited: " + open(os.path.join(work, "server.log")).read())
                time.sleep(0.1)
        check(base, "the server did not say where it listens")
        step("started", server=base, gateway=gateway_url)

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1200,1000", "--no-first-run", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update",
                         "--disable-default-apps", "--disable-sync", "--metrics-recording-only"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
        driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
        driver.set_page_load_timeout(TIMEOUT)
        driver.get(base + "/")
        page = Page(driver, base)
        check(page.dialog() is None, "no sheet at first")
        check(driver.execute_script("return !!window.ApplePaySession") is False,
              "headless Chromium has no ApplePaySession: the sandbox sheet is what runs")

        # 1. A purchase with shipping: two coffees, express shipping, the default card and contact.
        page.add("House Blend")
        page.add("House Blend")
        page.add("Enamel Mug")
        page.until(lambda: "Total" in driver.find_element(By.ID, "totals").text, "the cart's totals")
        if screenshots:
            os.makedirs(screenshots, exist_ok=True)
            driver.save_screenshot(os.path.join(screenshots, "checkout-page.png"))
        page.open_sheet()
        standard_total = page.total()
        express = driver.find_element(By.CSS_SELECTOR, "#sheet-methods input[value=express]")
        driver.find_element(By.CSS_SELECTOR, f"label[for='{express.get_attribute('id')}']").click()
        page.until(lambda: page.settled() and page.total() != standard_total, "the total with express shipping")
        express_total = page.total()
        if screenshots:
            driver.save_screenshot(os.path.join(screenshots, "sandbox-sheet.png"))
        first = page.pay()
        step("purchase with shipping", order=first, total=express_total)
        paid = {first: express_total}

        # 2. An unserviceable address (Germany), then a serviceable one (New York).
        page.add("Enamel Mug")
        page.open_sheet()
        Select(driver.find_element(By.ID, "sheet-contact")).select_by_index(2)
        page.until(lambda: page.settled() and page.error("contact"), "the error next to the shipping contact")
        message = page.error("contact")
        check(not page.pay_button().is_enabled(), "Pay is disabled while the address is unserviceable")
        check(driver.find_element(By.ID, "sheet-contact").get_attribute("aria-invalid") == "true",
              "the contact field is marked invalid")
        Select(driver.find_element(By.ID, "sheet-contact")).select_by_index(1)
        page.until(lambda: page.settled() and not page.error("contact") and page.pay_button().is_enabled(),
                   "the error to clear for a New York address")
        total = page.total()
        second = page.pay()
        step("unserviceable then corrected", order=second, error=message, total=total)
        paid[second] = total

        # 3. An invalid coupon, then a valid one.
        page.add("Hand Grinder")
        page.open_sheet()
        before = page.total()
        coupon = driver.find_element(By.ID, "sheet-coupon")
        coupon.send_keys("NOPE99")
        page.button_named(lambda name: name == "Apply coupon", page.dialog()).click()
        page.until(lambda: page.settled() and page.error("coupon"), "the error next to the coupon field")
        invalid = page.error("coupon")
        coupon.clear()
        coupon.send_keys("WELCOME10")
        page.button_named(lambda name: name == "Apply coupon", page.dialog()).click()
        page.until(lambda: page.settled() and not page.error("coupon") and page.total() != before,
                   "the discounted total")
        total = page.total()
        third = page.pay()
        step("invalid then valid coupon", order=third, error=invalid, before=before, total=total)
        paid[third] = total

        # 4. Another card (American Express).
        page.add("House Blend")
        page.open_sheet()
        Select(driver.find_element(By.ID, "sheet-card")).select_by_visible_text(
            next(o.text for o in Select(driver.find_element(By.ID, "sheet-card")).options if o.text.startswith("AmEx")))
        page.until(page.settled, "the sheet to take the new card")
        total = page.total()
        fourth = page.pay()
        step("another card", order=fourth, total=total)
        paid[fourth] = total

        # 4a. A plan in the cart with another product: the server refuses the cart (planNotAlone). The page shows no
        # totals (not the mug's, priced a moment before), says in a live region that a plan is bought on its own,
        # and its "Buy the plan on its own" button, pressed from the keyboard, leaves the plan alone in the cart.
        page.add("Enamel Mug")
        page.until(lambda: "Total" in driver.find_element(By.ID, "totals").text, "the mug's totals")
        page.add("Coffee of the Month")
        notice = driver.find_element(By.ID, "plan-notice")
        page.until(lambda: "on its own" in notice.text, "the notice that a plan is bought on its own")
        check(notice.get_attribute("aria-live") == "polite", "the notice is a live region")
        check(not driver.find_element(By.ID, "totals").is_displayed(), "no stale totals beside the notice")
        pay_button = page.apple_pay_button()
        check(pay_button.get_attribute("aria-disabled") == "true", "Apple Pay is disabled for a refused cart")
        check(pay_button.get_attribute("aria-describedby") == "plan-notice", "the button is described by the notice")
        notice_text = notice.text.splitlines()[0]
        alone = page.until(lambda: page.button_named(lambda name: name.startswith("Buy Coffee of the Month on its own")),
                           "the Buy the plan on its own button")
        alone.send_keys(Keys.ENTER)
        page.until(lambda: "Total" in driver.find_element(By.ID, "totals").text, "the plan's own totals")
        cart_text = driver.find_element(By.ID, "cart-items").text
        check("Coffee of the Month × 1" in cart_text and "Mug" not in cart_text, f"the cart holds {cart_text!r}")
        check(notice.text == "", "the notice is gone")
        check(driver.switch_to.active_element.get_attribute("id") == "cart-heading", "focus is back on the cart")
        step("plan with another product", notice=notice_text)

        # 4b. A plan (a monthly subscription with a $1 trial): the sandbox sheet mints a merchant token, the
        # first charge is the trial, and the server starts a subscription on that merchant token.
        page.open_sheet()
        total = page.total()
        plan_order = page.pay()
        request = urllib.request.Request(base + "/admin/v1/subscriptions",
                                         headers={"Authorization": "Bearer " + admin_token})
        subscriptions = json.load(urllib.request.urlopen(request, timeout=TIMEOUT))["subscriptions"]
        check(len(subscriptions) == 1, f"{len(subscriptions)} subscriptions after the plan purchase")
        subscription = subscriptions[0]
        check(subscription["orderId"] == plan_order, f"the subscription's order is {subscription.get('orderId')}")
        check(subscription["status"] == "active", f"the subscription is {subscription['status']}")
        check(subscription.get("merchantTokenIdentifier", "").startswith("DNITHE"),
              "the plan was paid with a merchant token")
        step("plan with a merchant token", order=plan_order, total=total, subscription=subscription["id"])
        paid[plan_order] = total

        # 4c. The subscription's own page, opened from the confirmation's link (the managementURL Apple shows in
        # Wallet too): its plan, the card's own last four digits (Apple's fpanSuffix), and Cancel, clicked as a
        # customer clicks it; the form posts url-encoded from the page's origin and comes back to the page.
        link = page.until(lambda: next((a for a in driver.find_elements(By.ID, "subscription-link")
                                        if a.is_displayed()), None), "the link to the subscription's page")
        link.click()
        page.until(lambda: driver.find_elements(By.ID, "subscription-status"), "the subscription's page")
        status_text = driver.find_element(By.ID, "subscription-status").text
        check(status_text == "active", f"the page says the subscription is {status_text}")
        charges_text = driver.find_element(By.ID, "charges").text
        check("1.00 USD" in charges_text and "approved at checkout" in charges_text,
              f"the page's past charges are {charges_text!r}, not the $1 trial just paid")
        check("No charges yet" not in driver.find_element(By.TAG_NAME, "body").text, "no 'No charges yet'")
        check(re.search(r"\d{4}-\d{2}-\d{2}", driver.find_element(By.TAG_NAME, "main").text) is None,
              "no ISO 8601 dates on the subscription's page")
        card_text = driver.find_element(By.ID, "card").text
        check(card_text.endswith("ending in " + subscription["cardSuffix"]),
              f"the page shows the card as {card_text!r}, the store's fpanSuffix is {subscription['cardSuffix']}")
        cancel = page.until(lambda: page.button_named(lambda name: name == "Cancel subscription"),
                            "the Cancel subscription button")
        cancel.click()
        page.until(lambda: driver.find_element(By.ID, "subscription-status").text == "cancelled",
                   "the page to say the subscription is cancelled")
        check(page.button_named(lambda name: name == "Cancel subscription") is None, "no Cancel button once cancelled")
        request = urllib.request.Request(base + "/admin/v1/subscriptions/" + subscription["id"],
                                         headers={"Authorization": "Bearer " + admin_token})
        stored = json.load(urllib.request.urlopen(request, timeout=TIMEOUT))["subscription"]
        check(stored["status"] == "cancelled" and stored.get("statusReason") == "customer",
              f"the store says {stored['status']} ({stored.get('statusReason')})")
        step("subscription cancelled from its page", subscription=subscription["id"], card=card_text)
        driver.get(base + "/")

        # 5. A cancel: the sheet closes, no order.
        page.add("Enamel Mug")
        page.open_sheet()
        page.until(page.settled, "the sheet to be ready")
        page.button_named(lambda name: name == "Cancel", page.dialog()).click()
        page.until(lambda: page.dialog() is None, "the sheet to close on Cancel")
        page.until(lambda: "cancelled" in driver.find_element(By.ID, "status").text, "the page to say it cancelled")
        step("cancel")

        # The store: one paid order per completed purchase, for the total the sheet showed; none for the cancel.
        request = urllib.request.Request(base + "/admin/v1/orders",
                                         headers={"Authorization": "Bearer " + admin_token})
        orders = json.load(urllib.request.urlopen(request, timeout=TIMEOUT))["orders"]
        check(len(orders) == len(paid), f"{len(orders)} orders in the store, {len(paid)} purchases")
        for order in orders:
            check(order["id"] in paid, f"unexpected order {order['id']}")
            check(order["status"] == "paid", f"order {order['id']} is {order['status']}")
            shown = paid[order["id"]].replace("$", "").replace(",", "")
            check(order["totals"]["total"] == shown, f"order {order['id']} total {order['totals']['total']} "
                                                     f"but the sheet showed {shown}")
        networks = {order["id"]: order["payment"]["network"] for order in orders}
        check(networks[fourth] == "AmEx", f"the fourth order was paid with {networks[fourth]}")
        check(networks[first] == "Visa", f"the first order was paid with {networks[first]}")
        step("store", orders=len(orders), networks=networks)

        # Nothing from another host: the page's own resource list and Chrome's network log.
        resources = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
            ".concat(performance.getEntriesByType('navigation').map(e => e.name))")
        requested = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                requested.append(message["params"]["request"]["url"])
        foreign = [url for url in resources + requested if not url.startswith(base + "/")]
        check(len(requested) > 10 and not foreign, f"requests to other hosts: {foreign[:5]}")
        step("same origin only", requests=len(requested), resources=len(resources))

        # Merchant validation went through the sandbox gateway with the Merchant Identity certificate.
        context = ssl.create_default_context(cafile=os.path.join(sandbox, "root.pem"))
        activity = json.load(urllib.request.urlopen(gateway_url + "/sandbox/v1/activity", context=context,
                                                    timeout=TIMEOUT))
        with open(os.path.join(sandbox, "merchant-identity.pem")) as handle:
            identity = hashlib.sha256(ssl.PEM_cert_to_DER_cert(handle.read())).hexdigest()
        check(activity["sessionsIssued"] == 6, f"the gateway issued {activity['sessionsIssued']} sessions, not 6")
        check(activity["lastClientCertificateSHA256"] == identity, "the gateway saw another client certificate")
        check(not activity.get("refused"), f"the gateway refused requests: {activity.get('refused')}")
        step("merchant validation through the sandbox gateway", sessions=activity["sessionsIssued"])
        print("browser checkout: 1 passed, 0 failed", flush=True)
        return 0
    except Failure as failure:
        step("failed", reason=str(failure))
        if driver is not None:
            try:
                driver.save_screenshot(os.path.join(work, "failure.png"))
                step("page at failure", text=driver.find_element(By.TAG_NAME, "body").text[:2000],
                     screenshot=os.path.join(work, "failure.png"))
            except Exception:  # the browser may be gone
                pass
        return 1
    finally:
        if driver is not None:
            driver.quit()
        for child in children:
            try:
                os.killpg(child.pid, signal.SIGTERM)
                child.wait(timeout=20)
            except Exception:
                child.kill()


if __name__ == "__main__":
    sys.exit(main())
