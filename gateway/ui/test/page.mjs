// The console test files' shared page steps: signing in through the form, and going to a
// route and waiting until it has rendered.

/**
 * A new page of `context` on the console at `url`, signed in with `token` through the
 * sign-in form; its console messages and page errors are pushed to `log`.
 */
export async function signedIn(context, url, token, log, timeoutMs) {
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  page.on("console", (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
  await page.goto(`${url}/ui#/signin`);
  await page.fill("#token", token);
  await page.click("#signin-form button[type=submit]");
  await page.waitForSelector("#signin-result .ok");
  return page;
}

/** Goes to a console route and waits until it has rendered. */
export async function show(page, hash) {
  const before = await page.evaluate(() => Number(document.body.dataset.rendered || 0));
  // The same hash fires no hashchange: the Refresh button renders the page again.
  await page.evaluate((h) => {
    if (location.hash === h) document.getElementById("refresh").click();
    else location.hash = h;
  }, hash);
  await page.waitForFunction((n) => Number(document.body.dataset.rendered || 0) > n && document.body.dataset.loading === "false", before);
}
