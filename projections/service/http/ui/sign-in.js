// The sign-in page: keep the token in a same-site cookie, then load the UI again.
"use strict";
document.getElementById("sign-in").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = encodeURIComponent(document.getElementById("token").value.trim());
  document.cookie = `lavalog_token=${token}; path=/; SameSite=Strict`;
  location.reload();
});
