// The browser upload page: the shared upload form (upload.js) with the
// page's own start route, the size its link accepts, and the expiry in the
// person's own time and words.
"use strict";

const main = document.getElementById("page");

if (main && document.getElementById("file")) {
  sluiceForm({
    startUrl: (n) => `${location.pathname}/start?file=${n}`,
    maxSize: () => Number(main.dataset.maxSize),
    maxFiles: () => Number(main.dataset.files || 1),
    done: async () => "You can go back to the conversation and say it is done.",
  });
}

const expiry = document.querySelector("time");
if (expiry && main && main.dataset.expiresAt) {
  const at = new Date(Number(main.dataset.expiresAt) * 1000);
  const minutes = Math.round((at - Date.now()) / 60000);
  const clock = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const left = minutes >= 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${minutes} min`;
  expiry.textContent = minutes > 0 ? `${clock} (in ${left})` : clock;
}
