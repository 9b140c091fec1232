using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>How a claim group shares a transaction's items between its callers and the claim-ahead buffer.</summary>
public sealed class ClaimGroupTests
{
    private static readonly DateTime Now = new(2026, 11, 29, 13, 0, 0, DateTimeKind.Utc);

    [Fact]
    public void A_group_asked_for_its_order_twice_still_gives_each_caller_its_own_items_and_the_rest_to_the_buffer()
    {
        var group = new ClaimGroup("k", ["t"], [new ClaimRequest("w1", ["t"], 1, 30), new ClaimRequest("w2", ["t"], 1, 30)], surplus: 3);
        group.Order(Now, new ClaimOptions());
        var order = group.Order(Now, new ClaimOptions());

        group.Share([.. Enumerable.Range(1, order.Slots.Count).Select(Item)]);

        Assert.Equal(5, order.Slots.Count);
        Assert.Equal([1L], group.Results[0].Select(i => i.Id));
        Assert.Equal([2L], group.Results[1].Select(i => i.Id));
        Assert.Equal([3L, 4L, 5L], group.NewBuffer.Select(i => i.Id));
    }

    private static TakenItem Item(int id) => new(id, 1, 1, id, "t", 0, [1], Now.AddSeconds(10), Reservation: id > 2);
}
