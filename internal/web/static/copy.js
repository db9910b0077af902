// The Copy buttons of the dashboard (the new API key on /settings/api-keys, a new hook's URL and
// secret on a project's hooks page).
//
// Loaded with <script src> (the CSP allows no inline code): a button with data-copy="<id>"
// copies the value of the input with that id through the clipboard API, falling back to
// selecting it so that the user can copy it by hand.
(function () {
  'use strict';

  var status = document.getElementById('copy-status');
  function say(text) { if (status) { status.textContent = text; } }

  document.querySelectorAll('button[data-copy]').forEach(function (button) {
    button.addEventListener('click', function () {
      var input = document.getElementById(button.getAttribute('data-copy'));
      if (!input) { return; }
      input.focus();
      input.select();
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(input.value).then(function () {
          say('Copied.');
        }, function () {
          say('Copying failed: it is selected, copy it with your keyboard.');
        });
      } else {
        say('It is selected: copy it with your keyboard.');
      }
    });
  });
})();
