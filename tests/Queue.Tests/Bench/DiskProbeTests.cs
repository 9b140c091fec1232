using System.Globalization;
using System.Text.RegularExpressions;
using Queue.Bench.Harness;

namespace Queue.Tests.Bench;

/// <summary>The benchmarks' raw limit of a durable commit: the disk's own flushes, measured in a given directory.</summary>
public sealed partial class DiskProbeTests
{
    [Fact]
    public async Task A_disk_probe_flushes_a_file_in_the_directory_it_is_given_reports_the_flushes_per_cut_and_in_all_and_removes_the_file()
    {
        var dir = Directory.CreateTempSubdirectory("disk-probe-test-").FullName;
        try
        {
            string cut, whole;
            await using (var probe = new DiskProbe(dir))
            {
                // A few flushes in each segment, however long the disk takes for them.
                await Eventually.UntilAsync(() => probe.FlushesSinceCut >= 3, "the probe has flushed three times", 30);
                Assert.Single(Directory.GetFiles(dir));
                cut = probe.Cut();
                await Eventually.UntilAsync(() => probe.FlushesSinceCut >= 3, "the probe has flushed three times since the cut", 30);
                whole = await probe.StopAsync();
            }
            Assert.Empty(Directory.GetFiles(dir));
            foreach (var summary in new[] { cut, whole })
            {
                var m = Figures().Match(summary);
                Assert.True(m.Success, summary);
                // An fsync takes time: a probe that flushed nothing would report zeros.
                Assert.True(double.Parse(m.Groups["p50"].Value, CultureInfo.InvariantCulture) > 0, summary);
            }
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [GeneratedRegex(@"^p50 (?<p50>\d+\.\d\d) ms  p99 \d+\.\d\d ms  p99\.9 \d+\.\d ms  max \d+ ms; over 20 ms for \d+\.\d\d s of \d+ s \(\d+\.\d %\)$")]
    private static partial Regex Figures();
}
