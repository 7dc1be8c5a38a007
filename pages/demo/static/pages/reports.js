/** Reports: apply_filters from the chat filters the reports list (the route comes from the server's reply). */
import { refreshMain } from "/static/pages/forms.js";

document.addEventListener("pagechat:refresh", (event) => {
  if (event.detail.action !== "apply_filters") return;
  const route = event.detail.message?.custom_payload?.data?.route;
  if (typeof route !== "string" || !route.startsWith("/reports/")) return;
  if (document.getElementById("reports-filter")) refreshMain(route);
  else window.location.assign(route);
});
