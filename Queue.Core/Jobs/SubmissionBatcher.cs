using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Claims;

namespace Queue.Core.Jobs;

/// <summary>
/// Groups concurrent job creations of this process into one transaction (one commit, three round trips for the whole
/// group), as claims and completions are grouped. Each caller keeps its own outcome: when a grouped transaction fails
/// for any reason but a deadlock (retried whole), its jobs are created again one transaction each, so one caller's
/// constraint error or bad data never fails the others. A caller that leaves after queueing does not cancel its job:
/// like a dropped connection after a commit, the job may exist, and the Idempotency-Key retry finds it.
/// See docs/DESIGN.md "Grouped submissions".
/// </summary>
public sealed partial class SubmissionBatcher(JobCreator creator, IOptions<JobOptions> options, ILogger<SubmissionBatcher> logger)
{
    private readonly Lock gate = new();
    private readonly List<Op> pending = [];
    private int flushing;

    public async Task<CreatedJob> CreateAsync(PendingJob job, CancellationToken ct)
    {
        var o = options.Value;
        var op = new Op(job);
        bool start;
        lock (gate)
        {
            start = GroupCommit.Enqueue(pending, op, ref flushing, o.MaxPendingSubmissions, o.MaxConcurrentSubmissionFlushes, "submissions");
        }
        if (start)
        {
            _ = Task.Run(FlushLoopAsync, CancellationToken.None);
        }
        try
        {
            return await op.Result.Task.WaitAsync(TimeSpan.FromMilliseconds(o.DatabaseWaitMilliseconds), ct);
        }
        catch (TimeoutException)
        {
            throw new ServiceBusyException("the database did not answer the submission in time");
        }
    }

    private async Task FlushLoopAsync()
    {
        var o = options.Value;
        while (true)
        {
            List<Op> batch;
            lock (gate)
            {
                if (pending.Count == 0)
                {
                    flushing--;
                    return;
                }
                // At most SubmissionBatch jobs and about SubmissionBatchBytes of documents per transaction (always one).
                var n = 1;
                var bytes = pending[0].Job.Bytes;
                while (n < pending.Count && n < o.SubmissionBatch && bytes + pending[n].Job.Bytes <= o.SubmissionBatchBytes)
                {
                    bytes += pending[n].Job.Bytes;
                    n++;
                }
                batch = pending.GetRange(0, n);
                pending.RemoveRange(0, n);
            }
            try
            {
                var results = await creator.CreateAsync(batch.Select(b => b.Job).ToList(), CancellationToken.None);
                for (var i = 0; i < batch.Count; i++)
                {
                    batch[i].Result.TrySetResult(results[i]);
                }
            }
            catch (Exception ex) when (batch.Count > 1)
            {
                LogGroupFailed(logger, ex, batch.Count);
                foreach (var op in batch)
                {
                    await CreateAloneAsync(op);
                }
            }
            catch (Exception ex)
            {
                batch[0].Result.TrySetException(ex);
            }
        }
    }

    private async Task CreateAloneAsync(Op op)
    {
        try
        {
            op.Result.TrySetResult((await creator.CreateAsync([op.Job], CancellationToken.None))[0]);
        }
        catch (Exception ex) when (ex is MySqlException or InvalidOperationException or FormatException)
        {
            op.Result.TrySetException(ex);
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "A grouped submission of {Count} jobs failed; creating them one by one")]
    private static partial void LogGroupFailed(ILogger logger, Exception exception, int count);

    private sealed class Op(PendingJob job)
    {
        public PendingJob Job { get; } = job;

        public TaskCompletionSource<CreatedJob> Result { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
