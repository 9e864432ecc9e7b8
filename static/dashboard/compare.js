// The compare page: a refused toolbar command (400) shows its one line instead of being dropped
// (htmx swaps only 2xx answers by default). No inline script: the page's CSP forbids it.
document.addEventListener("htmx:beforeSwap", function (event) {
  if (event.detail.xhr.status === 400 && event.detail.target.id === "compare-message") {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
