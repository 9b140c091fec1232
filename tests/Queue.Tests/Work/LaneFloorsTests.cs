using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>The lane floors stay bounded, and a full map makes room from the floors that lapsed or were dropped.</summary>
public sealed class LaneFloorsTests
{
    private static readonly DateTime Start = new(2026, 11, 29, 10, 0, 0, DateTimeKind.Utc);

    [Fact]
    public void A_full_map_gives_a_new_lane_no_floor_until_a_floor_is_dropped_or_lapses()
    {
        var floors = new LaneFloors();
        floors.Advance(Enumerable.Range(1, LaneFloors.MaxLanes).Select(j => Taken(j, 100 + j)), Start);

        floors.Advance([Taken(jobId: 20_001, id: 5)], Start);
        Assert.Equal(0, floors.Of(20_001, "t", Start));

        floors.Drop(1, "t");
        floors.Advance([Taken(jobId: 20_002, id: 6)], Start);
        Assert.Equal(6, floors.Of(20_002, "t", Start));

        var later = Start + LaneFloors.Rescan;
        floors.Advance([Taken(jobId: 20_003, id: 7)], later);
        Assert.Equal(7, floors.Of(20_003, "t", later));
        Assert.Equal(0, floors.Of(2, "t", later));
    }

    [Fact]
    public void A_floor_rises_to_the_highest_id_taken_and_never_falls_while_it_stands()
    {
        var floors = new LaneFloors();
        floors.Advance([Taken(1, 10), Taken(1, 12)], Start);
        floors.Advance([Taken(1, 11)], Start.AddMilliseconds(10));

        Assert.Equal(12, floors.Of(1, "t", Start.AddMilliseconds(20)));
    }

    private static TakenItem Taken(long jobId, long id) => new(id, jobId, 1, id, "t", 1, [], Start, false);
}
