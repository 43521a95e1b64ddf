export function bind(button, log) {
  const onClick = log.debug ? (event) => {
    log.info("clicked", event.target.id);
    button.disable();
  } : (event) => {
    button.disable();
  };
  button.addEventListener("click", onClick);
}
