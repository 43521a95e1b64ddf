export function bind(button, log) {
  const onClick = (event) => {
    log.info("clicked", event.target.id, event.timeStamp);
    button.disable();
  };
  button.addEventListener("click", onClick);
}
