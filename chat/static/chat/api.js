/** REST client for conversations (session cookie auth; CSRF header on unsafe methods). */

export class ChatApi {
  constructor(base, csrfToken) {
    this.base = base.endsWith("/") ? base : `${base}/`;
    this.csrfToken = csrfToken || "";
  }

  async request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (!["GET", "HEAD", "OPTIONS"].includes(method)) headers["X-CSRFToken"] = this.csrfToken;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(this.base + path, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) {
      const error = new Error(`${method} ${path} failed: ${response.status}`);
      error.status = response.status;
      throw error;
    }
    return response.status === 204 ? null : response.json();
  }

  /** [{id, title, page, updated_at}], newest first as the server orders them. */
  async listConversations() {
    const data = await this.request("GET", "conversations/");
    // Tolerate DRF pagination in case it is switched on later.
    return Array.isArray(data) ? data : data?.results ?? [];
  }

  /** {id, title, messages: [...]} */
  getConversation(id) {
    return this.request("GET", `conversations/${encodeURIComponent(id)}/`);
  }

  deleteConversation(id) {
    return this.request("DELETE", `conversations/${encodeURIComponent(id)}/`);
  }
}
