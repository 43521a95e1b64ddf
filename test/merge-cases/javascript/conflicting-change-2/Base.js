export function bind(button, log) {
  const onClick = (event) => {
    log.info("clicked", event.target.id);
    button.disable();
  };
  button.addEventListener("click", onClick);
}
