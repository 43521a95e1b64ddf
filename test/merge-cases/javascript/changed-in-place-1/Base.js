export function schedule(job, options) {
  const queue = options.queue ?? defaultQueue;
  if (job.priority > 5) {
    queue.unshift(job);
    notify(queue, job.id);
  }
  return queue.length;
}
