using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Queue.Core.Claims;
using Queue.Core.Hosting;
using Queue.Core.Jobs;
using Queue.Core.Ordering;

namespace Queue.Tests.Foundation;

public sealed class OptionsValidationTests
{
    [Fact]
    public async Task A_host_with_bad_settings_does_not_start_and_names_every_bad_field_with_its_rule()
    {
        var builder = Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Claims:Prefetch"] = "-1",
            ["Claims:MaxBatch"] = "0",
            ["Jobs:SubmissionBatch"] = "5000",
            ["Ordering:Policy"] = "fastest",
        });
        builder.Services.AddCheckedOptions<ClaimOptions, ClaimOptionsRules>();
        builder.Services.AddCheckedOptions<JobOptions, JobOptionsRules>();
        builder.Services.AddCheckedOptions<OrderingOptions, OrderingOptionsRules>();
        using var host = builder.Build();

        var ex = await Assert.ThrowsAnyAsync<Exception>(() => host.StartAsync());
        var failures = ex is AggregateException agg
            ? agg.InnerExceptions.OfType<OptionsValidationException>().SelectMany(e => e.Failures).ToList()
            : ((OptionsValidationException)ex).Failures.ToList();
        Assert.Contains("Claims:Prefetch must be 0 to 10000", failures);
        Assert.Contains("Claims:MaxBatch must be 1 to 10000", failures);
        Assert.Contains("Jobs:SubmissionBatch must be 1 to 1000", failures);
        Assert.Contains("Ordering:Policy must be seed or tenant-fair", failures);
        Assert.DoesNotContain(failures, f => f.StartsWith("Claims:ReservationSeconds", StringComparison.Ordinal));
    }

    [Fact]
    public void Settings_bound_before_the_container_exists_are_checked_by_the_same_rules()
    {
        var config = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?> { ["Claims:PollMilliseconds"] = "1" }).Build();
        var ex = Assert.Throws<OptionsValidationException>(() => config.BindChecked<ClaimOptions, ClaimOptionsRules>());
        Assert.Equal(["Claims:PollMilliseconds must be 10 to 60000"], ex.Failures);
        Assert.Equal(250, new ConfigurationBuilder().Build().BindChecked<ClaimOptions, ClaimOptionsRules>().PollMilliseconds);
    }
}
