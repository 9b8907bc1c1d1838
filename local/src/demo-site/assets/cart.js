// The demo's add-to-cart: a handler that holds the main thread for ?work=MS milliseconds (120 when
// absent), the way a shop recomputing its cart does, then shows the cart. User flows click it:
// their Interaction to Next Paint follows the cost. "Quick buy" does the same and is shown on wide
// screens only, as shops' desktop-only controls are.
(function () {
  var given = new URLSearchParams(location.search).get('work');
  var work = given === null ? NaN : Number(given);
  var cost = Number.isFinite(work) && work >= 0 ? Math.min(work, 5000) : 120;
  var count = 0;
  function addToCart() {
    var until = performance.now() + cost;
    var spins = 0;
    while (performance.now() < until) spins++;
    count++;
    var line = document.createElement('li');
    line.textContent = 'Trail Pack 30 (' + document.getElementById('size').value.toUpperCase() + ')';
    line.dataset.spins = String(spins);
    document.getElementById('cart-lines').appendChild(line);
    document.getElementById('cart').hidden = false;
    document.getElementById('cart-count').textContent = 'Cart: ' + count;
  }
  document.getElementById('add-to-cart').addEventListener('click', addToCart);
  document.getElementById('quick-buy').addEventListener('click', addToCart);
})();
