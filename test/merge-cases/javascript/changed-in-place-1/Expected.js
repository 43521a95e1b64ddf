export function schedule(job, options) {
  const queue = options.queue ?? defaultQueue;
  const at = Date.now();
  if (job.priority >= options.urgent) {
    queue.unshift(job);
    notify(queue, job.id, at);
  }
  return queue.length;
}
