using System.Data.Common;

namespace Queue.Core.Hosting;

/// <summary>The one shape of every periodic background loop: wait, run, report a failure and go on, stop with the host.</summary>
public static class PeriodicLoop
{
    /// <summary>
    /// Runs <paramref name="tick"/> every <paramref name="interval"/> until <paramref name="ct"/> is cancelled. Database
    /// and timeout errors go to <paramref name="failed"/> and the loop retries at the next tick; anything else is a bug
    /// and ends the loop (and, through the host, the process).
    /// </summary>
    public static async Task RunAsync(TimeSpan interval, Func<CancellationToken, Task> tick, Action<Exception> failed, CancellationToken ct,
        TimeProvider? clock = null)
    {
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(interval, clock ?? TimeProvider.System, ct);
                await tick(ct);
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested)
            {
                return;
            }
            catch (Exception ex) when (ex is DbException or TimeoutException or InvalidOperationException)
            {
                failed(ex);
            }
        }
    }
}
