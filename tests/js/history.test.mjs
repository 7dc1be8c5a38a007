// The conversation list's headings (chat/static/chat/history.js): "Pinned", then the reader's own calendar days.
import { test } from "node:test";
import assert from "node:assert/strict";

process.env.TZ = "Europe/Berlin"; // a zone with daylight saving time: its days are 23 and 25 hours long twice a year

const { conversationGroup } = await import("../../chat/static/chat/history.js");

const at = (...parts) => new Date(...parts).toISOString();

test("headings by calendar day, not by 24-hour spans", () => {
  const now = new Date(2026, 10, 25, 8, 0); // 25 Nov 2026, 08:00 local
  const group = (updated_at, extra = {}) => conversationGroup({ updated_at, ...extra }, now);
  assert.equal(group(at(2026, 10, 25, 0, 1)), "Today");
  assert.equal(group(at(2026, 10, 24, 23, 0)), "Yesterday"); // nine hours ago, but yesterday
  assert.equal(group(at(2026, 10, 24, 0, 0)), "Yesterday");
  assert.equal(group(at(2026, 10, 23, 23, 59)), "Previous 7 days");
  assert.equal(group(at(2026, 10, 19, 12, 0)), "Previous 7 days");
  assert.equal(group(at(2026, 10, 18, 12, 0)), "Previous 30 days");
  assert.equal(group(at(2026, 9, 27, 12, 0)), "Previous 30 days");
  assert.equal(group(at(2026, 9, 26, 12, 0)), "October 2026");
  assert.equal(group(at(2025, 0, 2, 12, 0)), "January 2025");
  assert.equal(group(at(2026, 10, 25, 9, 0)), "Today"); // a clock a little ahead of the reader's
});

test("pinned comes before any day; a missing date is older, not today", () => {
  const now = new Date(2026, 10, 25, 8, 0);
  assert.equal(conversationGroup({ updated_at: at(2020, 0, 1), pinned: true }, now), "Pinned");
  assert.equal(conversationGroup({ updated_at: "not a date" }, now), "Older");
  assert.equal(conversationGroup({}, now), "Older");
});

test("a day that lost an hour to daylight saving time still counts as a day", () => {
  // Berlin's clocks went forward on 29 March 2026: from the 28th to the 30th is 47 hours, two calendar days
  const now = new Date(2026, 2, 30, 8, 0);
  assert.equal(conversationGroup({ updated_at: at(2026, 2, 28, 12, 0) }, now), "Previous 7 days");
  assert.equal(conversationGroup({ updated_at: at(2026, 2, 29, 12, 0) }, now), "Yesterday");
});
