// The diff page's "copy markdown" button (served from the package; the pages load nothing else).
document.getElementById("copy").addEventListener("click", function () {
  var text = document.getElementById(this.dataset.target);
  text.select();
  var done = function () { document.getElementById("copied").textContent = "copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});
