using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Core.Cluster;

/// <summary>Measures the replica's lag every <c>Cluster:ReplicaCheckSeconds</c> (nothing to do without a replica).</summary>
public sealed partial class ReadSourceMonitor(IServiceProvider services, IOptions<ClusterOptions> options, ILogger<ReadSourceMonitor> logger)
    : BackgroundService
{
    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        var reads = services.GetRequiredService<ReadSource>();
        if (!reads.HasReplica)
        {
            return;
        }
        await reads.CheckAsync(stoppingToken);
        await PeriodicLoop.RunAsync(TimeSpan.FromSeconds(options.Value.ReplicaCheckSeconds), reads.CheckAsync, ex => LogFailed(logger, ex), stoppingToken);
    }

    [LoggerMessage(EventId = 9003, Level = LogLevel.Warning, Message = "Could not measure the replica's lag; reads stay on the primary until it answers")]
    private static partial void LogFailed(ILogger logger, Exception exception);
}
